module example.com/workload

go 1.21

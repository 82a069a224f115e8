package main

import (
	"fmt"

	"example.com/workload/stats"
)

func main() { fmt.Println(stats.Median([]float64{1, 2, 3})) }

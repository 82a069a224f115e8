package netproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// downloadSize is the measure: a 100 MB download.
const downloadSize = 100 << 20

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// BenchmarkDownload100MB: the same 100 MB over loopback, direct and through the whole
// path a sandboxed tool takes (TCP to the listener the proxy took over from the bridge,
// the proxy, TCP to the server; which namespace the listener was made in changes nothing
// on the way). Each iteration downloads it both ways, one right after the other, so the
// ratio holds on a loaded machine whose speed drifts between sub-benchmarks:
//
//	direct-MB/s, proxy-MB/s  the two speeds; proxy/direct their ratio
//	direct-cpu-us/MB, proxy-cpu-us/MB  this process's CPU (server, client and, for the
//	    proxy, the proxy too, all in this one process) per MB moved
//
// On loopback the "network" is itself CPU: a proxied download is two TCP connections
// where a direct one is one, so on a host with no idle core the ratio is bounded by the
// CPU figures (docs/workloads.md has the measurements and what they mean for real links).
func BenchmarkDownload100MB(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(downloadSize))
		io.CopyN(w, zeros{}, downloadSize)
	}))
	defer server.Close()
	allow, _ := ParseAllowlist([]string{onPort(server, "registry.example.com")})
	proxyURL := startProxy(b, &Proxy{Allow: allow, Resolve: loopbackNames})
	direct := download{client: &http.Client{Transport: &http.Transport{}}, url: server.URL + "/blob"}
	proxied := download{client: clientThrough(proxyURL, nil), url: "http://" + onPort(server, "registry.example.com") + "/blob"}
	buffer := make([]byte, 256<<10)
	b.SetBytes(2 * downloadSize)
	var directCost, proxyCost cost
	for range b.N {
		directCost.add(direct.run(b, buffer))
		proxyCost.add(proxied.run(b, buffer))
	}
	b.ReportMetric(directCost.mbPerSecond(b.N), "direct-MB/s")
	b.ReportMetric(proxyCost.mbPerSecond(b.N), "proxy-MB/s")
	b.ReportMetric(proxyCost.mbPerSecond(b.N)/directCost.mbPerSecond(b.N), "proxy/direct")
	b.ReportMetric(directCost.cpuPerMB(b.N), "direct-cpu-us/MB")
	b.ReportMetric(proxyCost.cpuPerMB(b.N), "proxy-cpu-us/MB")
}

type download struct {
	client *http.Client
	url    string
}

// run downloads once, and returns the wall time and this process's CPU it took.
func (d download) run(b *testing.B, buffer []byte) cost {
	began, cpuBefore := time.Now(), processCPU()
	response, err := d.client.Get(d.url)
	if err != nil {
		b.Fatal(err)
	}
	n := drain(response.Body, buffer)
	response.Body.Close()
	if n != downloadSize {
		b.Fatalf("got %d bytes", n)
	}
	return cost{wall: time.Since(began), cpu: processCPU() - cpuBefore}
}

type cost struct{ wall, cpu time.Duration }

func (c *cost) add(one cost) { c.wall += one.wall; c.cpu += one.cpu }

func (c cost) mbPerSecond(n int) float64 {
	return float64(n) * downloadSize / (1 << 20) / c.wall.Seconds()
}

func (c cost) cpuPerMB(n int) float64 {
	return float64(c.cpu.Microseconds()) / (float64(n) * downloadSize / (1 << 20))
}

// processCPU is the user and system time of this whole process so far.
func processCPU() time.Duration {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// drain reads body to its end as curl or npm would, in large reads (io.Discard's own
// 8 KB reads would measure the client's syscalls, not the path).
func drain(body io.Reader, buffer []byte) int64 {
	var total int64
	for {
		n, err := body.Read(buffer)
		total += int64(n)
		if err != nil {
			return total
		}
	}
}

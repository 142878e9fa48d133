// A CPU loop in Go for the host agent's tests: main.hot burns the time
// given in seconds; Debian's golang-go keeps its symbol table.
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func hot() {
	x := sink
	for i := uint64(0); i < 2000000; i++ {
		x = x*6364136223846793005 + i
	}
	sink = x
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		hot()
	}
}

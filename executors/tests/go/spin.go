package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

func main() {
	var flag int32
	go func() {
		time.Sleep(time.Millisecond)
		atomic.StoreInt32(&flag, 1)
	}()
	spins := 0
	for atomic.LoadInt32(&flag) == 0 {
		spins++
	}
	fmt.Printf("procs %d spun %v\n", runtime.GOMAXPROCS(0), spins > 0)
}

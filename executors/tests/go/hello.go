package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	results := make(chan int, 4)
	for i := 1; i <= 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Duration(i) * time.Millisecond)
			sum := 0
			for k := 0; k < 1000; k++ {
				sum += k * i
			}
			mu.Lock()
			total += sum
			mu.Unlock()
			results <- i
		}(i)
	}
	wg.Wait()
	close(results)
	order := []int{}
	for r := range results {
		order = append(order, r)
	}
	start := time.Now()
	time.Sleep(5 * time.Millisecond)
	if time.Since(start) < 5*time.Millisecond {
		fmt.Println("time went backwards")
		os.Exit(2)
	}
	fmt.Printf("total %d results %d\n", total, len(order))
}

// Counters served over HTTP: POST /add adds one and answers the new
// value, GET /value answers it; `?key=K` names one of several counters
// (none: the default one). Usage: server [ADDRESS], default :8080.
package main

import (
	"fmt"
	"net/http"
	"os"
	"sync"
)

func main() {
	var mu sync.Mutex
	values := map[string]int{}
	http.HandleFunc("/add", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		key := r.URL.Query().Get("key")
		mu.Lock()
		values[key]++
		v := values[key]
		mu.Unlock()
		fmt.Fprintf(w, "%d\n", v)
	})
	http.HandleFunc("/value", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		mu.Lock()
		v := values[key]
		mu.Unlock()
		fmt.Fprintf(w, "%d\n", v)
	})
	address := ":8080"
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	if err := http.ListenAndServe(address, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

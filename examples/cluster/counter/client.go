// The counter's workload: additions, each retried until it gets an
// answer within the client's timeout, then the value, which must be their
// number. Usage: client [URL [ADDITIONS [KEY]]], default
// http://server:8080, 10 and the default counter (clients with keys of
// their own share one server). Exits 1 when the counter counted an
// addition twice.
//
// The bug: a retry is not idempotent. When an answer is slower than the
// timeout (a delayed packet), the addition was made but the client adds
// again.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	base := "http://server:8080"
	if len(os.Args) > 1 {
		base = os.Args[1]
	}
	additions := 10
	if len(os.Args) > 2 {
		additions, _ = strconv.Atoi(os.Args[2])
	}
	query := ""
	if len(os.Args) > 3 {
		query = "?key=" + url.QueryEscape(os.Args[3])
	}
	client := &http.Client{Timeout: 20 * time.Millisecond}
	call := func(method, path string) string {
		for attempt := 1; ; attempt++ {
			request, _ := http.NewRequest(method, base+path+query, nil)
			response, err := client.Do(request)
			if err == nil {
				body, err := io.ReadAll(response.Body)
				response.Body.Close()
				if err == nil && response.StatusCode == http.StatusOK {
					return strings.TrimSpace(string(body))
				}
			}
			if attempt == 10 {
				fmt.Fprintln(os.Stderr, "no answer after 10 attempts:", err)
				os.Exit(2)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := 0; i < additions; i++ {
		call(http.MethodPost, "/add")
	}
	value := call(http.MethodGet, "/value")
	fmt.Println("value", value)
	if value != strconv.Itoa(additions) {
		fmt.Fprintf(os.Stderr, "counted %s additions for %d\n", value, additions)
		os.Exit(1)
	}
}

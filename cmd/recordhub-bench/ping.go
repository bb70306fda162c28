package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/gin-gonic/gin"
)

// runPing serves the bare handler every ratio is measured against: gin.New()
// in release mode with no middleware, GET /ping answering {"message":"pong"}.
// It runs in a process of its own (the bench re-executes itself) so that it
// competes with hey for the CPU exactly as the service does, and prints its
// address on stdout once it accepts connections.
func runPing(args []string) int {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/ping", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"message": "pong"})
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ping:", err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		ln.Close()
	}()
	if err := http.Serve(ln, r); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(os.Stderr, "ping:", err)
		return 1
	}
	return 0
}

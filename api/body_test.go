package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTooLargeBodyGetsItsAnswer: a client that sends its whole body before
// reading the answer, as Python's http.client, urllib and requests do,
// sends all 5 MiB of an oversized body without a reset and then reads a
// complete 413 with the error body; the server closes the connection
// after it. A client that waits for 100 Continue gets the 413 at once.
func TestTooLargeBodyGetsItsAnswer(t *testing.T) {
	srv, admin := newRawServer(t)
	const size = 5 << 20
	for _, tc := range []struct {
		name, framing string
		chunked       bool
		sendBody      bool
	}{
		{name: "content-length", framing: fmt.Sprintf("Content-Length: %d\r\n", size), sendBody: true},
		{name: "chunked", framing: "Transfer-Encoding: chunked\r\n", chunked: true, sendBody: true},
		{name: "expect-continue", framing: fmt.Sprintf("Content-Length: %d\r\nExpect: 100-continue\r\n", size)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
			head := "POST /api/admin/modules HTTP/1.1\r\nHost: recordhub.test\r\nAuthorization: Bearer " + admin +
				"\r\nContent-Type: application/json\r\n" + tc.framing + "\r\n"
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			if tc.sendBody {
				// Slowly but steadily: well past the moment the server has
				// answered, as a client on a real network would be.
				chunk := bytes.Repeat([]byte("x"), 32<<10)
				for sent := 0; sent < size; sent += len(chunk) {
					frame := chunk
					if tc.chunked {
						frame = append(fmt.Appendf(nil, "%x\r\n", len(chunk)), append(chunk, "\r\n"...)...)
					}
					if _, err := conn.Write(frame); err != nil {
						t.Fatalf("write after %d of %d bytes: %v", sent, size, err)
					}
					time.Sleep(5 * time.Millisecond)
				}
				if tc.chunked {
					if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
						t.Fatalf("write the last chunk: %v", err)
					}
				}
			}
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("read the response: %v", err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatalf("read the response body: %v", err)
			}
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413; body %s", res.StatusCode, body)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			if id := res.Header.Get("X-Request-Id"); id == "" || got["request_id"] != id {
				t.Errorf("request_id %v, X-Request-Id %q", got["request_id"], id)
			}
			delete(got, "request_id")
			want := map[string]any{"error": "payload_too_large", "message": fmt.Sprintf("the body exceeds %d bytes", 1<<20)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if !res.Close { // Connection: close, which ReadResponse takes out of the header
				t.Error("no Connection: close")
			}
			if n, err := br.Read(make([]byte, 1)); err == nil {
				t.Errorf("read %d bytes after the response, want the connection closed", n)
			}
		})
	}
}

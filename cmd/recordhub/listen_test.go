package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// listenDelivery is what the tests send: a body signed the way recordhub
// signs, with the secrets given (hexKey keys X-Webhook-Signature, stdKey
// webhook-signature).
type listenDelivery struct {
	body           string
	hexKey, stdKey []byte
	previousHexKey []byte // X-Webhook-Signature-Previous, when set
	timestamp      time.Time
}

func (d listenDelivery) request(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	hexSig := func(key []byte) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(d.body))
		return "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	ts := d.timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	mac := hmac.New(sha256.New, d.stdKey)
	mac.Write([]byte("evt_1." + strconv.FormatInt(ts.Unix(), 10) + "." + d.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Webhook-Event", "record_updated")
	req.Header.Set("X-Webhook-Id", "evt_1")
	req.Header.Set("X-Webhook-Attempt", "2")
	req.Header.Set("X-Webhook-Signature", hexSig(d.hexKey))
	if d.previousHexKey != nil {
		req.Header.Set("X-Webhook-Signature-Previous", hexSig(d.previousHexKey))
	}
	req.Header.Set("webhook-id", "evt_1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return req
}

func TestListenHandler(t *testing.T) {
	// A secret made the Standard Webhooks way, and one made before
	// (URL-safe base64, keyed with the whole string for both headers).
	key := []byte("0123456789abcdef0123456789abcdef")
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	oldSecret := "whsec_" + base64.RawURLEncoding.EncodeToString([]byte("an older secret of thirty-two b!"))
	const body = `{"id":"evt_1","event":"record_updated","record":{"id":"rec_1"}}`
	tests := []struct {
		name     string
		secret   string
		status   int
		delivery listenDelivery
		wantCode int
		want     []string // lines the output must hold
	}{
		{
			name: "new secret verifies both", secret: newSecret, status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte(newSecret), stdKey: key},
			wantCode: 204,
			want: []string{
				"POST /hook", "event:               record_updated", "event id:            evt_1",
				"webhook-id:          evt_1", "attempt:             2",
				"X-Webhook-Signature: ok\n", "webhook-signature:   ok\n",
				"body (JSON, 63 bytes):\n  | {\n  |   \"id\": \"evt_1\",\n  |   \"event\": \"record_updated\",\n  |   \"record\": {\n  |     \"id\": \"rec_1\"\n  |   }\n  | }\n",
				"answered 204",
			},
		},
		{
			name: "secret made before verifies both", secret: oldSecret, status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte(oldSecret), stdKey: []byte(oldSecret)},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: ok\n", "webhook-signature:   ok\n"},
		},
		{
			name: "wrong secret fails both", secret: newSecret, status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte("whsec_other"), stdKey: []byte("other")},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: FAILED", "webhook-signature:   FAILED (no signature matches the secret)"},
		},
		{
			name: "previous secret during a rotation", secret: oldSecret, status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte(newSecret), previousHexKey: []byte(oldSecret), stdKey: []byte(oldSecret)},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: ok (X-Webhook-Signature-Previous matches", "webhook-signature:   ok\n"},
		},
		{
			name: "stale timestamp", secret: newSecret, status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte(newSecret), stdKey: key, timestamp: time.Now().Add(-time.Hour)},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: ok\n", "webhook-signature:   FAILED (webhook-timestamp"},
		},
		{
			name: "no secret checks nothing", secret: "", status: 204,
			delivery: listenDelivery{body: body, hexKey: []byte(newSecret), stdKey: key},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: not checked (no --secret)", "webhook-signature:   not checked (no --secret)"},
		},
		{
			name: "status 500 answered", secret: newSecret, status: 500,
			delivery: listenDelivery{body: body, hexKey: []byte(newSecret), stdKey: key},
			wantCode: 500,
			want:     []string{"X-Webhook-Signature: ok\n", "answered 500"},
		},
		{
			name: "body that is not JSON", secret: newSecret, status: 204,
			delivery: listenDelivery{body: "plain <text>", hexKey: []byte(newSecret), stdKey: key},
			wantCode: 204,
			want:     []string{"X-Webhook-Signature: ok\n", "webhook-signature:   ok\n", "body (not JSON, 12 bytes):\n  | plain <text>\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			srv := httptest.NewServer(newListenHandler(tc.secret, tc.status, &out))
			defer srv.Close()
			res, err := srv.Client().Do(tc.delivery.request(t, srv.URL+"/hook"))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.wantCode {
				t.Errorf("answered %d, want %d", res.StatusCode, tc.wantCode)
			}
			got := out.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output does not hold %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestListenHandlerAgreesWithTheLibrary signs with the library itself, so
// the test's own signer above cannot hide a mistake shared with the code.
func TestListenHandlerAgreesWithTheLibrary(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("library-made key, 32 bytes long!"))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_9"}`)
	now := time.Now()
	sig, err := wh.Sign("evt_9", now, body)
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	srv := httptest.NewServer(newListenHandler(secret, 204, &out))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
	req.Header.Set("webhook-id", "evt_9")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := out.String(); !strings.Contains(got, "webhook-signature:   ok\n") || !strings.Contains(got, "X-Webhook-Signature: FAILED (no X-Webhook-Signature header)") {
		t.Errorf("output:\n%s", got)
	}
}

func TestListenHandlerRefusesOtherMethods(t *testing.T) {
	var out syncBuffer
	srv := httptest.NewServer(newListenHandler("", 204, &out))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || out.String() != "" {
		t.Errorf("GET: %d, output %q; want 405 and nothing printed", res.StatusCode, out.String())
	}
}

func TestListenArgs(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	tests := []struct {
		args    []string
		env     map[string]string
		want    listenOptions
		wantErr string
	}{
		{args: nil, want: listenOptions{port: 8099, status: 204}},
		{args: []string{"--port", "0", "--secret", "s1", "--status", "503"}, want: listenOptions{port: 0, secret: "s1", status: 503}},
		{args: nil, env: map[string]string{webhookSecretEnv: "from-env"}, want: listenOptions{port: 8099, secret: "from-env", status: 204}},
		{args: []string{"--secret", "flag"}, env: map[string]string{webhookSecretEnv: "from-env"}, want: listenOptions{port: 8099, secret: "flag", status: 204}},
		{args: []string{"--status", "99"}, wantErr: "--status 99"},
		{args: []string{"--status", "100"}, wantErr: "give one in 200..599"},
		{args: []string{"--status", "600"}, wantErr: "--status 600"},
		{args: []string{"--port", "70000"}, wantErr: "--port 70000"},
		{args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
		{args: []string{"--bogus"}, wantErr: "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseListenArgs(tc.args, env(tc.env), io.Discard, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestListenHelp: --help and -h print the usage and return nil at once,
// without listening (a listener would only return once ctx is done).
func TestListenHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		t.Run(arg, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stdout, stderr syncBuffer
			done := make(chan error, 1)
			go func() {
				done <- webhooksCommand(ctx, []string{"listen", "--port", "0", arg}, func(string) (string, bool) { return "", false }, &stdout, &stderr)
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: %v", arg, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not return: it is listening (output %q)", arg, stdout.String())
			}
			if got := stdout.String(); !strings.HasPrefix(got, listenUsage) || strings.Contains(got, "Listening") {
				t.Errorf("stdout %q, want the usage and nothing else", got)
			}
			if stderr.String() != "" {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
		})
	}
}

// TestRunListener: on port 0 it says the URL to subscribe and the server
// setting loopback receivers need, prints a delivery, and stops cleanly
// when ctx is done.
func TestRunListener(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runListener(ctx, listenOptions{port: 0, status: 202}, &out, func(a string) { addr <- a })
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatalf("runListener: %v", err)
	}
	banner := out.String()
	for _, want := range []string{"Subscribe this URL: http://" + a + "/webhooks\n", "RECORDHUB_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32", "answering 202", "signatures are not checked"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner does not hold %q:\n%s", want, banner)
		}
	}
	if !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("listening on %s, want 127.0.0.1 only", a)
	}
	res, err := http.Post("http://"+a+"/webhooks", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Errorf("answered %d, want 202", res.StatusCode)
	}
	if !strings.Contains(out.String(), "  | {\n  |   \"a\": 1\n  | }\n") {
		t.Errorf("output:\n%s", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runListener after ctx is done: %v, want nil", err)
	}
	if res, err := http.Post("http://"+a+"/webhooks", "application/json", strings.NewReader(`{}`)); err == nil {
		res.Body.Close()
		t.Error("still answering after it stopped")
	}
}

// TestWebhooksUsageNamesListen: `webhooks` with no or an unknown command
// shows listen beside recover.
func TestWebhooksUsageNamesListen(t *testing.T) {
	for _, args := range [][]string{nil, {"purge"}} {
		var stderr syncBuffer
		err := webhooksCommand(t.Context(), args, func(string) (string, bool) { return "", false }, io.Discard, &stderr)
		if err == nil || !strings.Contains(stderr.String(), listenUsage) {
			t.Errorf("webhooks %v: %v, stderr %q; want an error and listen's usage", args, err, stderr.String())
		}
	}
}

// TestListenEscapesWhatItPrints: a body cannot fake the verdict block nor
// reach the terminal: what the listener verified comes first, every line
// of the body after it is framed, and control characters (terminal
// escapes, carriage returns, C1 controls, bidi overrides) are printed
// escaped.
func TestListenEscapesWhatItPrints(t *testing.T) {
	const fake = "\n--- 2026-01-01T00:00:00Z  POST /webhooks\nevent id:            evt_FAKE\n" +
		"X-Webhook-Signature: ok\nwebhook-signature:   ok\n\x1b]0;pwned-title\x07\rcr\u009b31m\u202edone"
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, c := range []struct {
		name, body string
		escaped    []string // as the output must show them
	}{
		{"not JSON", fake, []string{`\x1b]0;pwned-title\x07\rcr\u009b31m\u202edone`, "evt_FAKE"}},
		{"JSON", `{"note":"` + "\u009b31m\u202e" + `","fake":"\nX-Webhook-Signature: ok"}`, []string{`"note": "\u009b31m\u202e"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out syncBuffer
			srv := httptest.NewServer(newListenHandler(secret, 204, &out))
			defer srv.Close()
			d := listenDelivery{body: c.body, hexKey: []byte("whsec_other"), stdKey: []byte("other")}
			res, err := srv.Client().Do(d.request(t, srv.URL+"/hook"))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			got := out.String()
			for _, r := range got {
				if r != '\n' && (r < 0x20 || r >= 0x7f && r < 0xa0 || r >= 0x2066 && r <= 0x2069 || r >= 0x202a && r <= 0x202e) {
					t.Errorf("output holds %U unescaped:\n%q", r, got)
					break
				}
			}
			var verdicts []string
			bodyStarts := -1
			lines := strings.Split(got, "\n")
			for i, l := range lines {
				if strings.HasPrefix(l, "X-Webhook-Signature:") || strings.HasPrefix(l, "webhook-signature:") || strings.HasPrefix(l, "event id:") {
					verdicts = append(verdicts, l)
					if bodyStarts >= 0 {
						t.Errorf("line %d %q comes after the body, which starts at line %d", i, l, bodyStarts)
					}
				}
				if strings.HasPrefix(l, "  | ") && bodyStarts < 0 {
					bodyStarts = i
				}
			}
			if len(verdicts) != 3 || !strings.Contains(verdicts[1], "FAILED") || !strings.Contains(verdicts[2], "FAILED") || strings.Contains(verdicts[0], "FAKE") {
				t.Errorf("verdict lines %q, want one event id and two FAILED signatures:\n%s", verdicts, got)
			}
			for _, w := range c.escaped {
				if !strings.Contains(got, w) {
					t.Errorf("output does not hold %q:\n%s", w, got)
				}
			}
		})
	}
}

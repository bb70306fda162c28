//go:build !noembedtemporal

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestBrokerEndpointsEndToEnd: through the whole service, record changes
// and a resync's snapshot reach a RabbitMQ queue and a JetStream stream,
// every event type once,
// each message verified by the Standard Webhooks library with the
// endpoint's secret; and the broker login's password appears nowhere:
// not in answers, rows, the service's log (at debug level), spans, nor
// in clear in the database.
func TestBrokerEndpointsEndToEnd(t *testing.T) {
	const natsPassword = "e2e-nats-pw-93fa1c"
	leaks := func(s string) bool { return strings.Contains(s, natsPassword) || strings.Contains(s, "guest:guest@") }

	rabbitURL, natsURL := storetest.RabbitMQ(t), storetest.NATS(t)
	conn, err := amqp.Dial(rabbitURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	id := models.NewID("")
	exchange, queue := "recordhub-e2e-"+id, "recordhub-e2e-"+id
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(queue, "orders.#", exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, subject := "RECORDHUB_E2E_"+id, "recordhub-e2e-"+id
	st, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), stream) })

	cfg := webhookConfig(t, models.SQLite)
	cfg.LogLevel = slog.LevelDebug
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	var stdout, stderr syncBuffer
	base, stop := startServiceEnv(t, cfg, Env{Stdout: &stdout, Stderr: &stderr, TracerProvider: tp})
	key := cfg.BootstrapAdminKey

	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"},
			map[string]any{"name": "state", "type": "status", "states": []string{"open", "shipped"}, "initial": "open"}}})
	events := []string{"record_created", "record_updated", "status_change", "custom_data_updated", "record_deleted"}
	au, _ := url.Parse(rabbitURL)
	au.RawQuery = "exchange=" + exchange + "&routing_key={module}.{event_type}"
	nu, _ := url.Parse(natsURL)
	endpoints := map[string]map[string]any{}
	for kind, u := range map[string]string{
		"amqp": au.String(),
		"nats": "nats://app:" + natsPassword + "@" + nu.Host + "/" + subject + ".{module}.{event_type}",
	} {
		ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": u, "events": append(events, "record_snapshot")})
		if ep["kind"] != kind || leaks(ep["url"].(string)) || !strings.Contains(ep["url"].(string), ":****@") {
			t.Errorf("%s endpoint answered kind %v, url %v: want %s and the password masked", kind, ep["kind"], ep["url"], kind)
		}
		endpoints[kind] = ep
	}

	path := base + "/api/modules/" + mod["id"].(string) + "/records"
	rec := jsonCall(t, "POST", path, key, map[string]any{"fields": map[string]any{"title": "a"}})
	recPath := path + "/" + rec["id"].(string)
	jsonCall(t, "PATCH", recPath, key, map[string]any{"fields": map[string]any{"state": "shipped"}})
	jsonCall(t, "PATCH", recPath, key, map[string]any{"custom_data": map[string]any{"note": "gift"}})
	jsonCall(t, "DELETE", recPath, key, nil)

	// record_created, record_updated + status_change, custom_data_updated, record_deleted.
	const want = 5
	var amqpMsgs []amqp.Delivery
	// arrived waits until the queue and the stream each hold n messages,
	// taking the queue's as they come.
	arrived := func(n int, what string) {
		t.Helper()
		storetest.Eventually(t, 60*time.Second, what+" in the queue", func() bool {
			for {
				m, ok, err := ch.Get(queue, true)
				if err != nil || !ok {
					break
				}
				amqpMsgs = append(amqpMsgs, m)
			}
			return len(amqpMsgs) >= n
		})
		storetest.Eventually(t, 60*time.Second, what+" in the stream", func() bool {
			info, err := st.Info(context.Background())
			return err == nil && info.State.Msgs >= uint64(n)
		})
	}
	arrived(want, "every event")

	verify := func(kind string, h http.Header, body []byte) string {
		secret := endpoints[kind]["secret"].(string)
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("%s message %s: %v", kind, h.Get("webhook-id"), err)
		}
		return h.Get("x-webhook-event")
	}
	seen := map[string]int{}
	for _, m := range amqpMsgs {
		h := http.Header{}
		for k, v := range m.Headers {
			if s, ok := v.(string); ok {
				h.Set(k, s)
			}
		}
		seen["amqp "+verify("amqp", h, m.Body)]++
	}
	for seq := uint64(1); seq <= want; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		for k, vs := range m.Header {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		seen["nats "+verify("nats", h, m.Data)]++
	}
	for _, kind := range []string{"amqp", "nats"} {
		for _, ev := range events {
			if seen[kind+" "+ev] != 1 {
				t.Errorf("%s: %d %s messages, want 1 (%v)", kind, seen[kind+" "+ev], ev, seen)
			}
		}
	}

	// A resync of each endpoint: one more record, then its snapshot.
	jsonCall(t, "POST", path, key, map[string]any{"fields": map[string]any{"title": "b"}})
	for _, ep := range endpoints {
		if st, m := call(t, "POST", base+"/api/admin/webhook-endpoints/"+ep["id"].(string)+"/resync", key, ""); st != 202 {
			t.Fatalf("resync: %d %v", st, m)
		}
	}
	const wantAll = want + 2 // record_created and record_snapshot of the second record
	arrived(wantAll, "the resync's snapshot")
	for _, m := range amqpMsgs[want:] {
		h := http.Header{}
		for k, v := range m.Headers {
			if s, ok := v.(string); ok {
				h.Set(k, s)
			}
		}
		seen["amqp "+verify("amqp", h, m.Body)]++
	}
	for seq := uint64(want + 1); seq <= wantAll; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		for k, vs := range m.Header {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		seen["nats "+verify("nats", h, m.Data)]++
	}
	for _, kind := range []string{"amqp", "nats"} {
		if seen[kind+" record_snapshot"] != 1 || seen[kind+" record_created"] != 2 {
			t.Errorf("%s after the resync: %v, want one record_snapshot and two record_created", kind, seen)
		}
	}

	for kind, ep := range endpoints {
		epID := ep["id"].(string)
		st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?endpoint_id="+epID+"&limit=100", key, "")
		if st != 200 || m["total"].(float64) != wantAll {
			t.Fatalf("%s deliveries: %d %v", kind, st, m)
		}
		for _, row := range m["data"].([]any) {
			id := row.(map[string]any)["id"].(string)
			body, status := getRaw(t, base+"/api/admin/webhook-deliveries/"+id, key)
			var full struct {
				Succeeded    bool   `json:"succeeded"`
				ResponseBody string `json:"response_body"`
			}
			json.Unmarshal([]byte(body), &full)
			if status != 200 || leaks(body) || !full.Succeeded || full.ResponseBody == "" {
				t.Errorf("%s delivery %s: %d, succeeded %v, confirmation %q, leaks the password: %v", kind, id, status, full.Succeeded, full.ResponseBody, leaks(body))
			}
		}
		for _, p := range []string{"/api/admin/webhook-endpoints/" + epID, "/api/admin/webhook-endpoints?include=stats", "/api/admin/access-logs?limit=100"} {
			if body, status := getRaw(t, base+p, key); status != 200 || leaks(body) {
				t.Errorf("GET %s: %d, leaks the password: %v", p, status, leaks(body))
			}
		}
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if leaks(stdout.String()) || leaks(stderr.String()) {
		t.Errorf("the service's output holds the password")
	}
	if len(spans.Ended()) == 0 {
		t.Error("no spans recorded")
	}
	systems := map[string]int{}
	for _, s := range spans.Ended() {
		for _, a := range s.Attributes() {
			if leaks(s.Name()) || leaks(a.Value.String()) {
				t.Errorf("span %q attribute %s holds the password", s.Name(), a.Key)
			}
			if s.Name() == "publish webhook" && a.Key == "messaging.system" {
				systems[a.Value.AsString()]++
			}
		}
	}
	if systems["rabbitmq"] != wantAll || systems["nats"] != wantAll {
		t.Errorf("publish spans by messaging.system %v, want %d of rabbitmq and of nats", systems, wantAll)
	}
	db := storetest.DB{Dialect: models.SQLite, DSN: filepath.Join(cfg.DataDir, "recordhub.db")}
	var n int
	if err := db.SQL(t).QueryRowContext(context.Background(), "SELECT COUNT(*) FROM webhook_endpoints WHERE url LIKE ? OR url_secret LIKE ?", "%"+natsPassword+"%", "%"+natsPassword+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := db.SQL(t).QueryRowContext(context.Background(), "SELECT COUNT(*) + ? FROM webhook_deliveries WHERE request_url LIKE ? OR request_headers LIKE ? OR response_body LIKE ?", n, "%"+natsPassword+"%", "%"+natsPassword+"%", "%"+natsPassword+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d endpoint or delivery rows hold the password in clear", n)
	}
}

// natsServer is a NATS server of the test's own, with JetStream kept in a
// directory that outlives its restarts; it is stopped when the test ends.
type natsServer struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func startNATSServer(t *testing.T) *natsServer {
	t.Helper()
	if _, err := exec.LookPath(natsServerBin); err != nil {
		if storetest.Required() {
			t.Fatalf("nats-server is required but not found: %v", err)
		}
		t.Skipf("%s not found (%v); install nats-server", natsServerBin, err)
	}
	s := &natsServer{t: t, port: freePort(t), dir: t.TempDir()}
	s.start()
	t.Cleanup(s.stop)
	return s
}

const natsServerBin = "/usr/sbin/nats-server"

func (s *natsServer) url() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *natsServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(natsServerBin, "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.dir)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	storetest.Eventually(s.t, 30*time.Second, "nats-server listening", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(s.port))
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// stop ends the server (SIGKILL: a crash, nothing flushed by courtesy).
func (s *natsServer) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// TestBrokerRestartEndToEnd: NATS is killed during a burst of changes to
// an endpoint with ordering "record", and started again: every event is
// in the stream exactly once (JetStream drops a repeat by Nats-Msg-Id),
// each record's versions in order, and every delivery has its successful
// row with nothing left in flight.
func TestBrokerRestartEndToEnd(t *testing.T) {
	srv := startNATSServer(t)
	nc, err := nats.Connect(srv.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "RECORDS", Subjects: []string{"records.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}

	cfg := webhookConfig(t, models.SQLite)
	base, stop := startServiceEnv(t, cfg, Env{Stdout: io.Discard, Stderr: io.Discard})
	t.Cleanup(func() { stop() })
	key := cfg.BootstrapAdminKey
	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "n", "type": "integer"}}})
	ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
		"url": srv.url() + "/records.{module}.{event_type}", "events": []string{"record_created", "record_updated"},
		"ordering": "record", "retry_max": 100,
	})
	epID := ep["id"].(string)

	const records, updates = 10, 4
	path := base + "/api/modules/" + mod["id"].(string) + "/records"
	var ids []string
	write := func(round int) {
		for i := range records {
			if round == 0 {
				ids = append(ids, jsonCall(t, "POST", path, key, map[string]any{"fields": map[string]any{"n": 0}})["id"].(string))
				continue
			}
			jsonCall(t, "PATCH", path+"/"+ids[i], key, map[string]any{"fields": map[string]any{"n": round}})
		}
	}
	write(0)
	write(1)
	srv.stop()
	for round := 2; round <= updates; round++ {
		write(round)
	}
	storetest.Eventually(t, 60*time.Second, "attempts failing while NATS is down", func() bool {
		st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?error=connection_refused&endpoint_id="+epID, key, "")
		return st == 200 && len(m["data"].([]any)) > 0
	})
	srv.start()

	const total = records * (updates + 1)
	storetest.Eventually(t, 120*time.Second, "every event in the stream", func() bool {
		info, err := js.Stream(context.Background(), "RECORDS")
		if err != nil {
			return false
		}
		si, err := info.Info(context.Background())
		return err == nil && si.State.Msgs >= total
	})
	st, err := js.Stream(t.Context(), "RECORDS")
	if err != nil {
		t.Fatal(err)
	}
	si, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != total {
		t.Errorf("stream holds %d messages, want %d: one per event", si.State.Msgs, total)
	}
	versions := map[string][]int{}
	for seq := si.State.FirstSeq; seq <= si.State.LastSeq; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Record struct {
				ID      string `json:"id"`
				Version int    `json:"version"`
			} `json:"record"`
		}
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Fatal(err)
		}
		versions[body.Record.ID] = append(versions[body.Record.ID], body.Record.Version)
	}
	for id, vs := range versions {
		for i, v := range vs {
			if v != i+1 {
				t.Errorf("record %s arrived in versions %v, want 1..%d in order", id, vs, updates+1)
				break
			}
		}
	}
	storetest.Eventually(t, 30*time.Second, "a successful row for every delivery", func() bool {
		st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?succeeded=true&endpoint_id="+epID+"&limit=100", key, "")
		return st == 200 && len(m["data"].([]any)) == total
	})
	if st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?error=in_flight&endpoint_id="+epID, key, ""); st != 200 || len(m["data"].([]any)) != 0 {
		t.Errorf("rows left in flight: %d %v", st, m)
	}
}

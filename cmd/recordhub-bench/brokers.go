package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
)

// The brokers mode: deliveries/s and machine CPU per delivery to an HTTP
// receiver, to RabbitMQ and to NATS JetStream, from one `serve` with its
// embedded Temporal server, in turns.

// brokerRounds is how many times each destination is measured, in turn.
const brokerRounds = 2

// sink keeps the first arrival of each record's message, by the record
// id in its body.
type sink struct {
	mu      sync.Mutex
	records map[string]time.Time
}

func newSink() *sink { return &sink{records: map[string]time.Time{}} }

func (s *sink) observe(body []byte) {
	at := time.Now()
	var ev struct {
		Record struct {
			ID string `json:"id"`
		} `json:"record"`
	}
	if json.Unmarshal(body, &ev) != nil || ev.Record.ID == "" {
		return
	}
	s.mu.Lock()
	if _, seen := s.records[ev.Record.ID]; !seen {
		s.records[ev.Record.ID] = at
	}
	s.mu.Unlock()
}

func (s *sink) arrivals(ids []string) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if t, ok := s.records[id]; ok {
			out[id] = t
		}
	}
	return out
}

// destination is one kind of endpoint the mode measures.
type destination struct {
	label, url string
	arrivals   func(ids []string) map[string]time.Time
}

// runBrokers measures, on `serve` with its embedded Temporal server, one
// endpoint at a time subscribed to record_created: an HTTP receiver in
// this process, a RabbitMQ exchange with a queue this process consumes,
// and a JetStream stream whose subject this process subscribes to; each
// brokerRounds times, in turns, -webhook-n records a run.
func (b *bench) runBrokers(ctx context.Context, root string) error {
	id := models.NewID("")
	// RabbitMQ: a topic exchange and a queue bound to it, consumed here.
	conn, err := amqp.Dial(b.o.brokersAMQP)
	if err != nil {
		return fmt.Errorf("RabbitMQ at %s: %w", b.o.brokersAMQP, err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	exchange, queue := "recordhub-bench-"+id, "recordhub-bench-"+id
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		return err
	}
	if err := ch.QueueBind(queue, "#", exchange, false, nil); err != nil {
		return err
	}
	msgs, err := ch.Consume(queue, "", true, true, false, false, nil)
	if err != nil {
		return err
	}
	rabbit := newSink()
	go func() {
		for m := range msgs {
			rabbit.observe(m.Body)
		}
	}()
	// NATS: a stream capturing the subject, and a subscriber to it.
	nc, err := nats.Connect(b.o.brokersNATS)
	if err != nil {
		return fmt.Errorf("NATS at %s: %w", b.o.brokersNATS, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, subject := "RECORDHUB_BENCH_"+id, "recordhub-bench-"+id
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}, Storage: jetstream.FileStorage}); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), stream)
	natsSink := newSink()
	sub, err := nc.Subscribe(subject+".>", func(m *nats.Msg) { natsSink.observe(m.Data) })
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()

	svc, adminKey, workers, stop, err := b.brokersService(ctx, root)
	if err != nil {
		return err
	}
	defer stop()
	f, err := setUp(ctx, svc, adminKey)
	if err != nil {
		return err
	}
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.Close()

	au, err := url.Parse(b.o.brokersAMQP)
	if err != nil {
		return err
	}
	au.RawQuery = "exchange=" + exchange + "&routing_key={module}.{event_type}"
	nu, err := url.Parse(b.o.brokersNATS)
	if err != nil {
		return err
	}
	nu.Path = "/" + subject + ".{module}.{event_type}"
	dests := []destination{
		{"HTTP", rcv.URL("/hook"), rcv.arrivals},
		{"RabbitMQ", au.String(), rabbit.arrivals},
		{"NATS JetStream", nu.String(), natsSink.arrivals},
	}
	admin := svc.as(adminKey)
	results := map[string][]throughput{}
	for round := range brokerRounds + 1 {
		for _, d := range dests {
			ep, err := admin.CreateEndpoint(ctx, client.EndpointInput{URL: d.url, Events: []string{"record_created"}})
			if err != nil {
				return fmt.Errorf("%s endpoint: %w", d.label, err)
			}
			if round == 0 {
				// Warm-up: connections, the worker's caches.
				ids, err := createMany(ctx, svc, f, 20, 1)
				if err != nil {
					return err
				}
				waitFor(ctx, len(ids), 30*time.Second, func() int { return len(d.arrivals(ids)) })
			} else {
				tp, err := b.destinationThroughput(ctx, svc, workers, f, d)
				if err != nil {
					return err
				}
				results[d.label] = append(results[d.label], tp)
			}
			if err := admin.DeleteEndpoint(ctx, ep.ID); err != nil {
				return err
			}
		}
	}

	shape := "embedded: serve with its embedded Temporal server, SQLite"
	if b.o.brokersProduction {
		shape = "production: serve --role api and one --role worker, PostgreSQL and Redis, a separate Temporal server on PostgreSQL"
	}
	fmt.Fprintf(b.out, "\nbrokers (%s), one endpoint at a time, %d deliveries a run, %d runs each in turns:\n", shape, b.o.webhookN, brokerRounds)
	for _, d := range dests {
		for _, r := range results[d.label] {
			fmt.Fprintf(b.out, "  %-16s %7.1f/s  %s CPU per delivery  (%d of %d delivered)\n", d.label, r.rate(), ms(r.cpuPer()), r.delivered, r.sent)
		}
	}
	return nil
}

// brokersService starts what the brokers mode measures: `serve` with its
// embedded Temporal server, or with -brokers-production the production
// shape. It returns the API's process, the bootstrap admin key, the
// processes whose workers send the attempts, and what stops them all.
func (b *bench) brokersService(ctx context.Context, root string) (api *service, adminKey string, workers []*service, stop func(), err error) {
	if !b.o.brokersProduction {
		fmt.Fprintf(b.out, "building ./cmd/recordhub ...\n")
		bin, err := buildService(ctx, root, b.work, "recordhub")
		if err != nil {
			return nil, "", nil, nil, err
		}
		e, err := b.startEmbeddedWith(ctx, bin, "brokers", nil)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return e.service, e.adminKey, []*service{e.service}, func() { stopService(b.out, "brokers: recordhub", e.service) }, nil
	}
	if err := pingRedis(ctx, b.o.redisURL); err != nil {
		return nil, "", nil, nil, err
	}
	fmt.Fprintf(b.out, "building ./cmd/recordhub -tags noembedtemporal ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub", "noembedtemporal")
	if err != nil {
		return nil, "", nil, nil, err
	}
	ts, stopTemporal, err := b.startTemporal(ctx, "brokers", "temporal.log")
	if err != nil {
		return nil, "", nil, nil, err
	}
	st, err := b.startProdServices(ctx, bin, ts, "brokers-prod", 1)
	if err != nil {
		stopTemporal()
		return nil, "", nil, nil, err
	}
	return st.api, st.adminKey, st.ws, func() { st.close(); stopTemporal() }, nil
}

// attempts sums the attempts the processes ws have recorded.
func attempts(ctx context.Context, ws []*service) (float64, error) {
	var n float64
	for _, w := range ws {
		a, err := w.metric(ctx, metricAttempts)
		if err != nil {
			return 0, err
		}
		n += a
	}
	return n, nil
}

// destinationThroughput creates -webhook-n records through svc and waits
// for their deliveries at d and for their attempts to end on workers,
// reading the machine's CPU around the run.
func (b *bench) destinationThroughput(ctx context.Context, svc *service, workers []*service, f fixture, d destination) (throughput, error) {
	n := b.o.webhookN
	tp := throughput{label: d.label, sent: n}
	fmt.Fprintf(b.out, "brokers: %s: %d records, %d at a time ...\n", d.label, n, webhookCreators)
	attempts0, err := attempts(ctx, workers)
	if err != nil {
		return tp, err
	}
	cpu0, _ := machineCPU()
	ids, err := createMany(ctx, svc, f, n, webhookCreators)
	if err != nil {
		return tp, err
	}
	waitFor(ctx, len(ids), 60*time.Second, func() int { return len(d.arrivals(ids)) })
	waitFor(ctx, n, 10*time.Second, func() int {
		a, _ := attempts(ctx, workers)
		return int(a - attempts0)
	})
	cpu1, _ := machineCPU()
	arr := times(d.arrivals(ids))
	tp.delivered, tp.span, tp.cpu = len(arr), span(arr), cpu1-cpu0
	return tp, nil
}

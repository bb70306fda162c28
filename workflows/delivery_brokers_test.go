package workflows

import (
	"context"
	"net/netip"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestDeliveryBrokerUnroutable runs the delivery workflow, with the real
// attempt activity, to a broker that has nowhere to put the message at
// first (RabbitMQ: no queue bound for the routing key; NATS: no stream for
// the subject): each attempt fails as unroutable and is retried on the
// schedule, and once a queue is bound (a stream made) before the third
// attempt, that one is confirmed and the delivery ends with three rows.
func TestDeliveryBrokerUnroutable(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the endpoint's URL, the change that gives the
		// message somewhere to go, and a count of the messages kept.
		setup func(t *testing.T) (string, func(), func() int)
	}{
		{"rabbitmq", rabbitSetup},
		{"nats", natsSetup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpointURL, fix, kept := tc.setup(t)
			f := newFixture(t, models.SQLite)
			ep, _, err := f.store.CreateEndpoint(t.Context(), f.tenantID, models.EndpointInput{URL: &endpointURL, Events: &[]string{models.EventRecordCreated}}, allowURL)
			if err != nil {
				t.Fatal(err)
			}
			ev := f.record(t)
			d, err := activities.NewDeliverer(f.store, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
			if err != nil {
				t.Fatal(err)
			}
			in, err := deliveryInput(ev, ep, activities.DefaultSchedule(), "")
			if err != nil {
				t.Fatal(err)
			}
			var s testsuite.WorkflowTestSuite
			s.SetLogger(testLogger(t))
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
			Register(env, d)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: WorkflowID(ev.ID, ep.ID), TaskQueue: DefaultTaskQueue})
			var starts []time.Duration
			begin := env.Now()
			started := func() {
				starts = append(starts, env.Now().Sub(begin))
				if len(starts) == 3 {
					fix()
				}
			}
			env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { started() })
			env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { started() })
			env.ExecuteWorkflow(DeliveryWorkflowName, in)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(seconds(0, 60, 180), starts); diff != "" {
				t.Errorf("attempt start times (-want +got):\n%s", diff)
			}
			rows, _, err := f.store.ListDeliveries(t.Context(), f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, EndpointID: ep.ID})
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(rows)
			type row struct {
				Attempt   int
				Error     string
				Succeeded bool
			}
			var got []row
			for _, r := range rows {
				got = append(got, row{r.Attempt, r.Error, r.Succeeded})
			}
			want := []row{{1, models.DeliveryErrUnroutable, false}, {2, models.DeliveryErrUnroutable, false}, {3, "", true}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if n := kept(); n != 1 {
				t.Errorf("the broker kept %d messages, want 1", n)
			}
		})
	}
}

func rabbitSetup(t *testing.T) (string, func(), func() int) {
	conn, err := amqp.Dial(storetest.RabbitMQ(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	exchange, queue := "recordhub-test-"+models.NewID(""), "recordhub-test-"+models.NewID("")
	if err := ch.ExchangeDeclare(exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(storetest.RabbitMQURL())
	u.RawQuery = "exchange=" + exchange + "&routing_key={module}.{event_type}"
	bind := func() {
		if err := ch.QueueBind(queue, "things.*", exchange, false, nil); err != nil {
			t.Errorf("bind: %v", err)
		}
	}
	kept := func() int {
		q, err := ch.QueueDeclarePassive(queue, false, true, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return q.Messages
	}
	return u.String(), bind, kept
}

func natsSetup(t *testing.T) (string, func(), func() int) {
	nc, err := nats.Connect(storetest.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := models.NewID("")
	name, subject := "RECORDHUB_TEST_"+id, "recordhub-test-"+id
	create := func() {
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{subject + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
			t.Errorf("create stream: %v", err)
		}
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	kept := func() int {
		st, err := js.Stream(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return int(info.State.Msgs)
	}
	u, _ := url.Parse(storetest.NATSURL())
	return "nats://" + u.Host + "/" + subject + ".{module}.{event_type}", create, kept
}

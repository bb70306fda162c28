package workflows

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// payloadTypes are the types that cross Temporal as workflow or activity
// payloads, with the JSON names running executions hold. A renamed field
// must keep its name on the wire (a tag), or in-flight payloads stop
// decoding: this list changes only when a field is added.
var payloadTypes = []struct {
	name string
	v    any
	want []string
}{
	{"DeliveryInput", DeliveryInput{}, []string{"endpoint_id", "event_id", "event_type", "module_id", "policy", "record_id", "replay_of", "retry_max", "tenant_id"}},
	{"Schedule", activities.Schedule{}, []string{"attempt_timeout", "attempts", "initial", "max_interval"}},
	{"DeliveryOutput", DeliveryOutput{}, []string{"attempts", "delivery_id", "error", "status_code", "succeeded"}},
	{"PurgeWorkflowInput", PurgeWorkflowInput{}, []string{}},
	{"PurgeWorkflowOutput", PurgeWorkflowOutput{}, []string{"kinds"}},
	{"RecoveryInput", RecoveryInput{}, []string{"after", "as_of", "endpoint_id", "max_events", "page_heartbeat", "page_size", "progress", "recovery_id", "since", "tenant_id", "until"}},
	{"RecoveryOutput", RecoveryOutput{}, []string{"failed", "found", "replayed"}},
	{"AttemptInput", activities.AttemptInput{}, []string{"EndpointID", "EventID", "FirstAttempt", "Renumber", "ReplayOf", "RetryMax", "TenantID", "Throttled"}},
	{"AttemptOutput", activities.AttemptOutput{}, []string{"Attempt", "DeliveryID", "Error", "StatusCode"}},
	{"SettleInput", activities.SettleInput{}, []string{"endpoint_id", "event_id", "run_id", "tenant_id", "workflow_id"}},
	{"PurgeInput", activities.PurgeInput{}, []string{"kind"}},
	{"PurgeOutput", activities.PurgeOutput{}, []string{"cutoff", "deleted", "kind", "more"}},
	{"RecoverPageInput", activities.RecoverPageInput{}, []string{"after", "as_of", "before", "endpoint_id", "limit", "max_events", "recovery_id", "since", "tenant_id", "until"}},
	{"RecoverPageOutput", activities.RecoverPageOutput{}, []string{"capped", "done", "failed", "found", "last", "replayed"}},
	{"FinishRecoveryInput", activities.FinishRecoveryInput{}, []string{"error", "progress", "recovery_id", "status"}},
	{"RecoveryProgress", models.RecoveryProgress{}, []string{"Failed", "Found", "Replayed"}},
	{"ResyncInput", ResyncInput{}, []string{"after", "endpoint_id", "page_heartbeat", "page_size", "position", "progress", "resync_id", "started_at", "tenant_id"}},
	{"ResyncOutput", ResyncOutput{}, []string{"covered", "examined", "sent"}},
	{"ResyncPageInput", activities.ResyncPageInput{}, []string{"after", "before", "endpoint_id", "limit", "position", "resync_id", "started_at", "tenant_id"}},
	{"ResyncPageOutput", activities.ResyncPageOutput{}, []string{"covered", "done", "examined", "last", "sent"}},
	{"FinishResyncInput", activities.FinishResyncInput{}, []string{"error", "progress", "resync_id", "status"}},
	{"ResyncProgress", models.ResyncProgress{}, []string{"covered", "examined", "sent"}},
	{"ResyncCursor", models.ResyncCursor{}, []string{"module_id", "record_id"}},
	{"RecordSequenceInput", RecordSequenceInput{}, []string{"endpoint_id", "queue", "record_id", "tenant_id"}},
	{"SequencedDelivery", SequencedDelivery{}, []string{"delivery", "record_version"}},
}

func TestPayloadJSONNames(t *testing.T) {
	for _, pt := range payloadTypes {
		t.Run(pt.name, func(t *testing.T) {
			if diff := cmp.Diff(payloadKeys(t, filled(pt.v)), pt.want); diff != "" {
				t.Errorf("%s's JSON names changed (-got +want): renamed fields must keep their wire names with a tag\n%s", pt.name, diff)
			}
		})
	}
}

// TestPayloadTypesPinned checks that every struct a registered workflow or
// activity takes or returns, and every struct inside one, is in
// payloadTypes, and that each of their fields names itself on the wire
// with a tag: an untagged field's name would follow a rename of the Go
// field, and in-flight payloads would stop decoding.
func TestPayloadTypesPinned(t *testing.T) {
	reg := &recordingRegistry{}
	Register(reg, &activities.Deliverer{})
	RegisterPurge(reg, &activities.Purger{})
	RegisterRecovery(reg, &activities.Recoverer{})
	if len(reg.fns) == 0 {
		t.Fatal("nothing was registered")
	}
	listed := map[reflect.Type]bool{}
	for _, pt := range payloadTypes {
		listed[reflect.TypeOf(pt.v)] = true
	}
	used := map[reflect.Type]bool{}
	for _, fn := range reg.fns {
		ft := reflect.TypeOf(fn)
		for i := range ft.NumIn() {
			payloadStructs(ft.In(i), used)
		}
		for i := range ft.NumOut() {
			payloadStructs(ft.Out(i), used)
		}
	}
	for typ := range used {
		if !listed[typ] {
			t.Errorf("%v crosses Temporal but is not in payloadTypes: add it with its JSON names", typ)
		}
	}
	for typ := range listed {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Errorf("%v.%s has no JSON name: pin the name it has on the wire (json:%q when untagged)", typ, f.Name, f.Name)
			}
		}
	}
}

// recordingRegistry keeps the functions registered with it.
type recordingRegistry struct {
	worker.Registry // nil: registration with options is all Register* use
	fns             []any
}

func (r *recordingRegistry) RegisterWorkflowWithOptions(w any, _ workflow.RegisterOptions) {
	r.fns = append(r.fns, w)
}

func (r *recordingRegistry) RegisterActivityWithOptions(a any, _ activity.RegisterOptions) {
	r.fns = append(r.fns, a)
}

// payloadStructs adds to seen the struct types t holds, t included, but
// time.Time, which encodes as a string.
func payloadStructs(t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		payloadStructs(t.Elem(), seen)
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				payloadStructs(t.Field(i).Type, seen)
			}
		}
	}
}

// TestRecordedPayloadNames checks every payload in the recorded histories
// against its type: a name a running execution holds that the type no
// longer has would be dropped on decoding.
func TestRecordedPayloadNames(t *testing.T) {
	byName := map[string]any{}
	for _, pt := range payloadTypes {
		byName[pt.name] = pt.v
	}
	workflowIO := map[string][2]string{
		DeliveryWorkflowName: {"DeliveryInput", "DeliveryOutput"},
		PurgeWorkflowName:    {"PurgeWorkflowInput", "PurgeWorkflowOutput"},
		RecoveryWorkflowName: {"RecoveryInput", "RecoveryOutput"},
		ResyncWorkflowName:   {"ResyncInput", "ResyncOutput"},
		// A sequencer returns nothing; its signals are SequencedDelivery.
		RecordSequenceWorkflowName: {"RecordSequenceInput", ""},
	}
	activityIO := map[string][2]string{
		AttemptActivityName:        {"AttemptInput", "AttemptOutput"},
		SettleDeliveryActivityName: {"SettleInput", ""},
		PurgeActivityName:          {"PurgeInput", "PurgeOutput"},
		RecoverPageActivityName:    {"RecoverPageInput", "RecoverPageOutput"},
		FinishRecoveryActivityName: {"FinishRecoveryInput", ""},
		ResyncPageActivityName:     {"ResyncPageInput", "ResyncPageOutput"},
		FinishResyncActivityName:   {"FinishResyncInput", ""},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	check := func(t *testing.T, where, typ string, payloads *commonpb.Payloads) {
		t.Helper()
		for _, p := range payloads.GetPayloads() {
			var obj map[string]json.RawMessage
			if json.Unmarshal(p.GetData(), &obj) != nil || obj == nil {
				continue
			}
			if typ == "" {
				t.Errorf("%s: a payload %s where none is expected", where, p.GetData())
				continue
			}
			checked[typ] = true
			have := payloadKeys(t, filled(byName[typ]))
			for k := range obj {
				if !slices.Contains(have, k) {
					t.Errorf("%s: recorded %s holds %q, which %s no longer has (it has %q)", where, typ, k, typ, have)
				}
			}
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			hist, err := client.HistoryFromJSON(r, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatalf("read %s: %v", f, err)
			}
			var wf [2]string
			scheduled := map[int64]string{}
			for _, e := range hist.GetEvents() {
				if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
					wf = workflowIO[a.GetWorkflowType().GetName()]
					check(t, "workflow input", wf[0], a.GetInput())
				}
				if a := e.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
					check(t, "workflow result", wf[1], a.GetResult())
				}
				if a := e.GetWorkflowExecutionFailedEventAttributes(); a != nil {
					check(t, "workflow failure", wf[1], a.GetFailure().GetApplicationFailureInfo().GetDetails())
				}
				if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
					name := a.GetActivityType().GetName()
					scheduled[e.GetEventId()] = name
					check(t, name+" input", activityIO[name][0], a.GetInput())
				}
				if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
					name := scheduled[a.GetScheduledEventId()]
					check(t, name+" result", activityIO[name][1], a.GetResult())
				}
				if a := e.GetActivityTaskFailedEventAttributes(); a != nil {
					name := scheduled[a.GetScheduledEventId()]
					check(t, name+" failure", activityIO[name][1], a.GetFailure().GetApplicationFailureInfo().GetDetails())
				}
			}
		})
	}
	// The recordings must reach the payloads that matter most, or this
	// test checks nothing.
	for _, typ := range []string{"DeliveryInput", "AttemptInput", "AttemptOutput", "RecoveryInput", "RecoverPageInput", "ResyncInput", "ResyncPageInput"} {
		if !checked[typ] {
			t.Errorf("no recorded history holds a %s payload", typ)
		}
	}
}

// payloadKeys returns the sorted top-level JSON names of v.
func payloadKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%T does not marshal to an object: %v", v, err)
	}
	keys := []string{}
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// filled returns a copy of struct v with every exported field set to a
// non-zero value, so that omitempty and omitzero fields marshal too.
func filled(v any) any {
	p := reflect.New(reflect.TypeOf(v))
	fill(p.Elem())
	return p.Elem().Interface()
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	}
}

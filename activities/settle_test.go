package activities

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestSettleDelivery: a last attempt whose worker died leaves its row in
// flight and the delivery uncounted; settling the run marks the row
// worker_lost and counts one failed delivery, and settling it again
// changes nothing. The death is simulated, as in TestAttemptMarksLostAttempt,
// by a store that loses the attempt's outcome.
func TestSettleDelivery(t *testing.T) {
	forDialects(t, func(t *testing.T, d models.Dialect) {
		recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		f := newFixture(t, storetest.Open(t, d), recv.URL)
		settledAt := testNow.Add(time.Minute)
		dl := newDeliverer(t, &finishFailsOnce{Store: f.store}, Config{AllowCIDRs: loopback, Now: fixedNow, DisableAfter: DefaultDisableAfter})

		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(dl)
		if _, err := env.ExecuteActivity(dl.Attempt, f.input()); err == nil {
			t.Fatal("Attempt succeeded with its outcome lost")
		}
		lost := f.onlyRow(t)
		if !lost.InFlight() || lost.WorkflowID == "" || lost.RunID == "" {
			t.Fatalf("row after the lost attempt: error %q, workflow %q, run %q; want in flight, with its run", lost.Error, lost.WorkflowID, lost.RunID)
		}
		if got := endpointHealth(t, f); got.ConsecutiveFailures != 0 {
			t.Fatalf("health counted before settling: %+v", got)
		}

		in := SettleInput{TenantID: f.tenantID, EventID: f.event.ID, EndpointID: f.endpoint.ID, WorkflowID: lost.WorkflowID, RunID: lost.RunID}
		dl.now = func() time.Time { return settledAt }
		want := health{Enabled: true, ConsecutiveFailures: 1, FirstFailure: true, LastFailureAt: &settledAt}
		for i := range 2 {
			if err := dl.SettleDelivery(t.Context(), in); err != nil {
				t.Fatalf("SettleDelivery %d: %v", i+1, err)
			}
			got := f.onlyRow(t)
			if got.Error != models.DeliveryErrWorkerLost || !got.FinishedAt.Equal(settledAt) || got.ErrorMessage == "" {
				t.Errorf("after settle %d: row error %q, finished %v, message %q; want worker_lost, finished %v, with a message",
					i+1, got.Error, got.FinishedAt, got.ErrorMessage, settledAt)
			}
			if diff := cmp.Diff(endpointHealth(t, f), want); diff != "" {
				t.Errorf("health after settle %d (-got +want):\n%s", i+1, diff)
			}
			dl.now = func() time.Time { return settledAt.Add(time.Hour) } // a second settle must not move anything
		}
	})
}

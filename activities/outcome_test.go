package activities

import (
	"errors"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

// TestAttemptOutcome reads what Attempt writes into its errors, as the
// workflow gets them: through the failure converter, under an activity
// error, and under a timeout whose cause is the previous attempt's.
func TestAttemptOutcome(t *testing.T) {
	out := AttemptOutput{DeliveryID: "whd_2", Attempt: 2, StatusCode: 500, Error: "http_status"}
	failed := temporal.NewApplicationError("the receiver answered 500", ErrTypeDeliveryFailed, out)
	fc := temporal.GetDefaultFailureConverter()
	asActivity := func(cause error) error {
		return fc.FailureToError(&failurepb.Failure{
			Message: "activity error",
			Cause:   fc.ErrorToFailure(cause),
			FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
				ActivityType: &commonpb.ActivityType{Name: "Attempt"}, RetryState: enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED,
			}},
		})
	}
	for _, tc := range []struct {
		name   string
		err    error
		want   AttemptOutput
		wantOK bool
	}{
		{"the attempt's error", failed, out, true},
		{"under an activity error", asActivity(failed), out, true},
		{"under a timeout, the previous attempt's", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, failed), out, true},
		{"no details", temporal.NewApplicationError("record delivery attempt", ErrTypeStore), AttemptOutput{}, false},
		{"no attempt number", temporal.NewApplicationError("refused", ErrTypeStore, AttemptOutput{Error: DeliveryErrInternal}), AttemptOutput{}, false},
		{"other details", fc.FailureToError(fc.ErrorToFailure(temporal.NewApplicationError("other", "Other", "a string"))), AttemptOutput{}, false},
		{"a timeout alone", temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), AttemptOutput{}, false},
		{"not an application error", errors.New("canceled"), AttemptOutput{}, false},
		{"nil", nil, AttemptOutput{}, false},
	} {
		got, ok := AttemptOutcome(tc.err)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: AttemptOutcome = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

package attachsvc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/contiv/netplugin/netplugin/masterclient"
)

// A delete netmaster answers 404 (the endpoint is already gone, e.g. a
// retried CNI DEL whose first attempt reached a netmaster that died before
// answering) completes the detach; other failures do not.
func TestEndpointGone(t *testing.T) {
	gone := fmt.Errorf("delete endpoint %q in network n.t: %w", "c1",
		&masterclient.StatusError{URL: "http://198.18.1.2:9999/plugin/deleteEndpoint", StatusCode: 404, Message: "not found"})
	if !endpointGone(gone) {
		t.Errorf("404 not taken as gone: %v", gone)
	}
	for _, err := range []error{
		fmt.Errorf("wrapped: %w", &masterclient.StatusError{StatusCode: 500, Message: "store down"}),
		errors.New("connection refused"),
	} {
		if endpointGone(err) {
			t.Errorf("%v taken as gone", err)
		}
	}
}

package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	got, err := ReadTargets(strings.NewReader("# instances\nhttp://a:1/\n\n  http://b:2  \n"))
	if err != nil || !reflect.DeepEqual(got, []string{"http://a:1/", "http://b:2"}) {
		t.Fatalf("ReadTargets: %q, %v", got, err)
	}
	if got, err = CleanTargets(got); err != nil || !reflect.DeepEqual(got, []string{"http://a:1", "http://b:2"}) {
		t.Fatalf("CleanTargets: %q, %v", got, err)
	}
	for _, bad := range [][]string{nil, {"a:1"}, {"ftp://a"}, {"http://a/?x=1"}, {"http://"}} {
		if _, err := CleanTargets(bad); err == nil {
			t.Errorf("CleanTargets(%q) took it", bad)
		}
	}
}

// TestCheckTargets asks real servers on loopback: one healthy, one that is
// no throttlelab instance, one gone.
func TestCheckTargets(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	ctx := context.Background()
	if err := CheckTargets(ctx, []string{ok.URL}); err != nil {
		t.Errorf("a healthy target: %v", err)
	}
	if err := CheckTargets(ctx, []string{ok.URL, other.URL}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a target answering 404: %v", err)
	}
	if err := CheckTargets(ctx, []string{gone.URL}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("a closed target: %v", err)
	}
}

package top

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttlelab/throttlelab/watch"
	"github.com/throttlelab/throttlelab/watch/watchtest"
)

func TestCheckTiming(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		sample, interval, window time.Duration
		bad                      string // the setting named, "" for none
	}{
		{10 * ms, time.Second, 100 * ms, ""},
		{5 * ms, time.Second, 100 * ms, "sample 5ms"},
		{10 * ms, 5 * ms, 100 * ms, "interval 5ms"},
		{50 * ms, 20 * ms, 100 * ms, "interval 20ms"},
		{50 * ms, time.Second, 20 * ms, "window 20ms"},
	}
	for _, c := range cases {
		err := CheckTiming(c.sample, c.interval, c.window)
		if (err == nil) != (c.bad == "") || err != nil && !strings.HasPrefix(err.Error(), c.bad) {
			t.Errorf("CheckTiming(%s, %s, %s) = %v, want an error naming %q", c.sample, c.interval, c.window, err, c.bad)
		}
	}
}

// TestShowOnce shows one report of a fake tree as JSON and as a table, and
// says so when interrupted before the report.
func TestShowOnce(t *testing.T) {
	root := watchtest.FakeRoot(t, "v2-kubepods-systemd")
	w, err := watch.New(watch.Options{Root: root, SampleEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b bytes.Buffer
	d := Display{Interval: 30 * time.Millisecond, Once: true, JSON: true, Out: &b, View: View{Sort: ColumnIndex("name")}}
	if err := Show(context.Background(), w, d); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Items []watch.Stats } // a GroupStatsList (schemas/groupstatslist.json)
	err = json.Unmarshal(b.Bytes(), &doc)
	list := doc.Items
	if err != nil || len(list) == 0 {
		t.Fatalf("--once --json printed %d groups (%v):\n%s", len(list), err, b.String())
	}
	b.Reset()
	d.JSON = false
	if err := Show(context.Background(), w, d); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines < len(list) {
		t.Errorf("the table has %d lines for %d groups:\n%s", lines, len(list), b.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Show(ctx, w, d); !errors.Is(err, ErrNoReport) {
		t.Errorf("interrupted before the report: %v, want ErrNoReport", err)
	}
}

// Package top is the live view of a host's cgroups over a watch.Watcher:
// the table (View orders and filters a report's rows, WriteTable prints
// them), Show (once, JSON lines, a screen, a metrics endpoint) and, in
// package top/tui, the interactive screen.
//
//	w, err := watch.New(watch.Options{Root: "/"})
//	if err != nil {
//		return err
//	}
//	defer w.Close()
//	return top.Show(ctx, w, top.Display{Interval: time.Second, Once: true, Out: os.Stdout,
//		View: top.View{Sort: top.ColumnIndex("throttled"), Desc: true}})
package top

// Package agreement holds the test that every path to advice gives the same
// answer on the same demand: advise --csv (demand and advise), the
// node agent's summary (what /advice serves), check (fleet, over recorded
// demand) and the reports' Advice section. They share one model (cfs) and
// one entry point (advise.Decide); the test catches a path that drifts from
// them in how it feeds them.
package agreement

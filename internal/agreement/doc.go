// Package agreement holds the test that every path to advice gives the same
// answer on the same demand: advise --csv (demand and advise), the
// node agent's summary and a real agent's /advice over HTTP (agent.New on a
// fake cgroup node whose container uses that demand), check (fleet, over
// recorded demand) and the reports' Advice section. They share one model (cfs) and
// one entry point (advise.Decide); the test catches a path that drifts from
// them in how it feeds them. TestCommandsAgree runs advise --csv and check as
// commands (internal/cli.Run, their flags, defaults and JSON) on that demand.
// TestLevelAgrees feeds a demand whose level rises and requires every path
// to judge the level by the same rule (advise.LevelOf): the same warning,
// band and basis.
package agreement

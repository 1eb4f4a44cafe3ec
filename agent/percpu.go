package agent

// The per-CPU split of hot containers: while a container is hot (sampled
// every SampleEvery), the watcher reads its CPU time on each CPU beside
// its usage (watch.ByNeed.PerCPU, cgroup.PerCPUReader: v1's
// cpuacct.usage_percpu, one pread that gives the usage too; on v2 its
// threads' run time by the CPU each last ran on), and observe notes it in
// the summary (ContainerSummary.NotePerCPU) before the sample, so that its
// chunks are replayed with the kernel's per-CPU runtime slices
// (cfs.Demand.PerCPU), as advise --cgroup replays them, and its view says
// how many CPUs it ran on. A chunk's samples taken while it was cold (the
// coarse grid) have no reading and take the chunk's split; a chunk with no
// reading at all replays as before, without one. Config.NoPerCPU leaves
// it out.

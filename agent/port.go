package agent

// DefaultPort is the TCP port the agent serves /metrics, /advice and
// /evaluate on unless told otherwise: the command's --listen default, the
// rendered DaemonSet's and the Helm chart's containerPort, and the port of
// every agent URL in the docs.
const DefaultPort = 9101

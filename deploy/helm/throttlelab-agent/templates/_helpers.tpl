{{/*
The name of the release's namespaced objects: the release's name if it
holds the chart's, else RELEASE-CHART, cut to 63 (DNS labels), as
agentmanifest.FullName makes it.
*/}}
{{- define "throttlelab-agent.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end }}

{{/*
The name of the release's cluster-wide objects (ClusterRole and its
binding): NAMESPACE-FULLNAME, so that releases of one name in two
namespaces do not share them.
*/}}
{{- define "throttlelab-agent.clusterName" -}}
{{- printf "%s-%s" .Release.Namespace (include "throttlelab-agent.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "throttlelab-agent.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/*
The pods' labels, and the selector of the DaemonSet and the Service. Every
agent of every release carries app.kubernetes.io/name: throttlelab and
app.kubernetes.io/component: agent (kubectl throttlelab finds the agents
by them).
*/}}
{{- define "throttlelab-agent.selectorLabels" -}}
app.kubernetes.io/component: agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/name: throttlelab
{{- end }}

{{/* The labels of every object: Helm's standard ones. */}}
{{- define "throttlelab-agent.labels" -}}
{{ include "throttlelab-agent.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ include "throttlelab-agent.chart" . }}
{{- end }}

{{- define "throttlelab-agent.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

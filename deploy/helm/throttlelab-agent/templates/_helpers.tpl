{{/* The labels of every object: those of throttlelab k8s render agent. */}}
{{- define "throttlelab-agent.labels" -}}
app.kubernetes.io/component: agent
app.kubernetes.io/managed-by: throttlelab
app.kubernetes.io/name: throttlelab
{{- end }}

{{/* The pods' labels, and the selector of the DaemonSet and the Service. */}}
{{- define "throttlelab-agent.podLabels" -}}
app.kubernetes.io/component: agent
app.kubernetes.io/name: throttlelab
{{- end }}

{{- define "throttlelab-agent.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

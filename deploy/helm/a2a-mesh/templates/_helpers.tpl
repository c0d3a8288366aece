{{/* The release's name for its objects: the release name, or <release>-a2a-mesh. */}}
{{- define "a2a-mesh.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "a2a-mesh.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: a2a-mesh
{{- end -}}

{{/* The labels that select one service's pods; call with (dict "root" $ "service" name). */}}
{{- define "a2a-mesh.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end -}}

{{/* The image the services run. */}}
{{- define "a2a-mesh.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The gateway's Service name. */}}
{{- define "a2a-mesh.gatewayService" -}}
{{- printf "%s-gateway" (include "a2a-mesh.fullname" .) -}}
{{- end -}}

{{/* The service account every pod runs as: the chart's own (named after the release unless serviceAccount.name says), or serviceAccount.name, or the namespace's default. */}}
{{- define "a2a-mesh.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "a2a-mesh.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

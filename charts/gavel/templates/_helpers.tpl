{{/* Names and labels shared by gavel's templates. */}}

{{/* The release's full name: the release name, or RELEASE-gavel when it does not contain "gavel". */}}
{{- define "gavel.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the controller pod; never change them (Deployment selectors are immutable). */}}
{{- define "gavel.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* Labels on every object of the release. */}}
{{- define "gavel.labels" -}}
{{ include "gavel.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gavel
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "gavel.serviceAccountName" -}}
{{- default (include "gavel.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The controller image reference; the tag defaults to the chart's appVersion. */}}
{{- define "gavel.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The one namespace the controller watches, or "" for all; fails on more than one. */}}
{{- define "gavel.watchNamespace" -}}
{{- if gt (len .Values.watchNamespaces) 1 -}}
{{- fail (printf "watchNamespaces: the controller watches one namespace or all of them ([]), got %d: %v" (len .Values.watchNamespaces) .Values.watchNamespaces) -}}
{{- end -}}
{{- first .Values.watchNamespaces | default "" -}}
{{- end -}}

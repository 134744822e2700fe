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
{{- if and .Values.watchNamespaces .Values.watchNamespaceSelector -}}
{{- fail (printf "watchNamespaceSelector: %q needs watchNamespaces [] (a selector picks among every namespace; watchNamespaces names one)" .Values.watchNamespaceSelector) -}}
{{- end -}}
{{- first .Values.watchNamespaces | default "" -}}
{{- end -}}

{{/* Labels that select the NATS pod. */}}
{{- define "gavel.natsSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end -}}

{{/* Labels on the chart's NATS objects. */}}
{{- define "gavel.natsLabels" -}}
{{ include "gavel.natsSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gavel
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The URL gavel reaches NATS at: the chart's own NATS Service, or nats.url ("" = no NATS). */}}
{{- define "gavel.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- if .Values.nats.url -}}
{{- fail "nats.url: leave it empty while nats.enabled is true (the chart's own NATS is used), or set nats.enabled=false to use the NATS at that URL" -}}
{{- end -}}
{{- printf "nats://%s-nats.%s.svc:4222" (include "gavel.fullname" .) .Release.Namespace -}}
{{- else -}}
{{- .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{/* The Secret the controller mounts its NATS material from ("" = none). */}}
{{- define "gavel.natsCredentialsSecret" -}}
{{- if .Values.nats.credentialsSecret -}}
{{- .Values.nats.credentialsSecret -}}
{{- else if .Values.nats.enabled -}}
{{- printf "%s-nats-credentials" (include "gavel.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding every NATS seed; only the NATS pod's bootstrap reads it. */}}
{{- define "gavel.natsOperatorSecret" -}}
{{- printf "%s-nats-operator" (include "gavel.fullname" .) -}}
{{- end -}}

{{/* The NATS image reference; the tag defaults to the chart's appVersion. */}}
{{- define "gavel.natsImage" -}}
{{- printf "%s:%s" .Values.nats.image.repository (default .Chart.AppVersion .Values.nats.image.tag) -}}
{{- end -}}

{{/* JetStream's file store limit: 90 % of nats.storage.size, in MiB. */}}
{{- define "gavel.natsMaxFileStore" -}}
{{- $size := toString .Values.nats.storage.size -}}
{{- $digits := regexFind "^[0-9]+" $size -}}
{{- $unit := trimPrefix $digits $size -}}
{{- $mib := dict "Mi" 1 "Gi" 1024 "Ti" 1048576 -}}
{{- if or (not $digits) (not (hasKey $mib $unit)) -}}
{{- fail (printf "nats.storage.size: %q must be a whole number of Mi, Gi or Ti (e.g. 1Gi)" $size) -}}
{{- end -}}
{{- printf "%dMi" (div (mul (atoi $digits) (get $mib $unit) 9) 10) -}}
{{- end -}}

{{/* The NATS servers of the chart's StatefulSet: 1, or a JetStream cluster of 3 or more. */}}
{{- define "gavel.natsServers" -}}
{{- $n := int .Values.nats.cluster.replicas -}}
{{- if eq $n 2 -}}
{{- fail "nats.cluster.replicas: 2 servers cannot lose one (JetStream needs a majority of them): use 1, or 3 or more" -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/*
Replicas of gavel's JetStream streams the controller is given (GAVEL_NATS_STREAM_REPLICAS; ""
= none: existing streams keep theirs). nats.streamReplicas 0 means: with the chart's NATS as
many as its servers, at most 3; with an existing NATS, none.
*/}}
{{- define "gavel.natsStreamReplicas" -}}
{{- $want := int .Values.nats.streamReplicas -}}
{{- if .Values.nats.enabled -}}
{{- $servers := int (include "gavel.natsServers" .) -}}
{{- if gt $want $servers -}}
{{- fail (printf "nats.streamReplicas: %d replicas need as many NATS servers, and nats.cluster.replicas is %d" $want $servers) -}}
{{- end -}}
{{- if eq $want 0 -}}{{- min $servers 3 -}}{{- else -}}{{- $want -}}{{- end -}}
{{- else if and (gt $want 0) .Values.nats.url -}}
{{- $want -}}
{{- end -}}
{{- end -}}

{{/* The route URLs of the chart's NATS servers (stable names through the headless Service). */}}
{{- define "gavel.natsRoutes" -}}
{{- $name := printf "%s-nats" (include "gavel.fullname" .) -}}
{{- range $i := until (int (include "gavel.natsServers" .)) }}
- nats://{{ $name }}-{{ $i }}.{{ $name }}-headless.{{ $.Release.Namespace }}.svc:6222
{{- end }}
{{- end -}}

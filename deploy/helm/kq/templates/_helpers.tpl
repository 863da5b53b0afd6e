{{/* The namespace every namespaced object goes in. */}}
{{- define "kq.namespace" -}}
{{- required "namespace must be set" .Values.namespace -}}
{{- end -}}

{{/* Labels of every object: deploy/'s, then Helm's own. */}}
{{- define "kq.labels" -}}
app.kubernetes.io/name: kq
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The controller's pods, as the Services and the Deployment select them. */}}
{{- define "kq.selectorLabels" -}}
app.kubernetes.io/name: kq
control-plane: controller-manager
{{- end -}}

{{/* Where kq run keeps its webhook serving certificate (kq's default unless configured). */}}
{{- define "kq.certDir" -}}
{{- dig "webhook" "certDir" "/tmp/k8s-webhook-server/serving-certs" .Values.configuration -}}
{{- end -}}

{{/* The leader-election Lease's name (kq's default unless configured). */}}
{{- define "kq.leaseName" -}}
{{- dig "leaderElection" "resourceName" "c1f6bfd2.kueue.x-k8s.io" .Values.configuration -}}
{{- end -}}

{{/* kq run's Configuration: .Values.configuration with what the chart owns set from values. */}}
{{- define "kq.configuration" -}}
{{- $config := deepCopy .Values.configuration -}}
{{- $_ := set $config "namespace" (include "kq.namespace" .) -}}
{{- $health := get $config "health" | default dict -}}
{{- $_ = set $health "healthProbeBindAddress" (printf ":%d" (int .Values.ports.health)) -}}
{{- $_ = set $config "health" $health -}}
{{- $metrics := get $config "metrics" | default dict -}}
{{- $_ = set $metrics "bindAddress" (printf ":%d" (int .Values.ports.metrics)) -}}
{{- $_ = set $config "metrics" $metrics -}}
{{- $webhook := get $config "webhook" | default dict -}}
{{- $_ = set $webhook "port" (int .Values.ports.webhook) -}}
{{- $_ = set $config "webhook" $webhook -}}
{{- $integrations := get $config "integrations" | default dict -}}
{{- $_ = set $integrations "frameworks" .Values.integrations.frameworks -}}
{{- $_ = set $config "integrations" $integrations -}}
{{- toYaml $config -}}
{{- end -}}

{{/* The webhook rules for the job kinds of the enabled integrations, with these operations. */}}
{{- define "kq.jobRules" -}}
{{- $root := index . 0 -}}
{{- $operations := index . 1 -}}
{{- range $framework := $root.Values.integrations.frameworks }}
{{- $kind := index $root.Values.integrations.kinds $framework | default dict }}
{{- if not $kind.resource }}
{{- fail (printf "integrations.kinds has no apiGroup/apiVersion/resource for %q" $framework) }}
{{- end }}
{{- $ops := $operations }}
{{- if $kind.mutateOnUpdate }}
{{- $ops = list "CREATE" "UPDATE" }}
{{- end }}
- apiGroups: [{{ $kind.apiGroup | quote }}]
  apiVersions: [{{ $kind.apiVersion | quote }}]
  operations: {{ toJson $ops }}
  resources: [{{ $kind.resource | quote }}]
{{- end }}
{{- /* A serving owner's pods go through the pod webhook even when pod is not listed. */}}
{{- $frameworks := $root.Values.integrations.frameworks }}
{{- $needsPods := false }}
{{- range $framework := $frameworks }}
{{- if (index $root.Values.integrations.kinds $framework | default dict).needsPods }}
{{- $needsPods = true }}
{{- end }}
{{- end }}
{{- if and $needsPods (not (has "pod" $frameworks)) }}
- apiGroups: [""]
  apiVersions: ["v1"]
  operations: {{ toJson $operations }}
  resources: ["pods"]
{{- end }}
{{- end -}}

{{/* A webhook's client configuration: the path on kq's webhook Service. */}}
{{- define "kq.webhookClient" -}}
clientConfig:
  service:
    name: kueue-webhook-service
    namespace: {{ include "kq.namespace" .root }}
    path: {{ .path }}
    port: 443
{{- end -}}

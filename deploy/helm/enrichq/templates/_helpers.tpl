{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "enrichq.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "enrichq.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: call with (dict "root" $ "component" "api"). */}}
{{- define "enrichq.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "enrichq.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingSecret -}}
{{- else -}}
{{- include "enrichq.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "enrichq.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "enrichq.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "enrichq.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The environment every service shares: the ConfigMap. The Secret comes key by key (enrichq.secretEnv). */}}
{{- define "enrichq.envFrom" -}}
- configMapRef:
    name: {{ include "enrichq.fullname" . }}
{{- end -}}

{{/* The migration Job's key: the tables' owner. No service reads it. */}}
{{- define "enrichq.migrateKey" -}}ENRICHQ_MIGRATE_DATABASE_URL{{- end -}}

{{/* The Secret's keys the services read: the variables that are secrets (docs/configuration.md),
secrets.extraKeys (a vendors file's key_env, ...), and every key of secrets.create: never the
migration Job's. */}}
{{- define "enrichq.serviceKeys" -}}
{{- $keys := list "DATABASE_URL" "REDIS_URL" "ENRICHQ_API_KEYS" "ENRICHQ_ERASURE_KEY" "ENRICHQ_REDIS_SENTINEL_PASSWORD" "ENRICHQ_PLATFORM_CLIENT_SECRET" "ENRICHQ_PLATFORM_TOKEN_KEY" "ENRICHQ_WEBHOOK_SECRET" -}}
{{- if not .Values.vendors -}}{{- $keys = append $keys "ENRICHQ_VENDOR_KEY" -}}{{- end -}}
{{- $keys = concat $keys .Values.secrets.extraKeys -}}
{{- if not .Values.secrets.existingSecret -}}
{{- range $k, $v := .Values.secrets.create -}}
{{- if $v -}}{{- $keys = append $keys $k -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $skip := list (include "enrichq.migrateKey" .) -}}
{{- range .Values.vendors -}}{{- $skip = append $skip (include "enrichq.vendorKeyEnv" .name) -}}{{- end -}}
{{- $out := list -}}
{{- range ($keys | uniq) -}}{{- if not (has . $skip) -}}{{- $out = append $out . -}}{{- end -}}{{- end -}}
{{- $out | sortAlpha | join "," -}}
{{- end -}}

{{/* The variable a vendor's key is read from (its key_env): VENDOR_KEY_ and its name, upper-cased, - as _. */}}
{{- define "enrichq.vendorKeyEnv" -}}
{{- printf "VENDOR_KEY_%s" (. | upper | replace "-" "_") -}}
{{- end -}}

{{/* Each vendor's key, an env entry from its keySecret (default: the chart's Secret, key its
key_env). Optional: the worker refuses to start, naming the variable, when one is missing. */}}
{{- define "enrichq.vendorEnv" -}}
{{- $secret := include "enrichq.secretName" . -}}
{{- range .Values.vendors }}
{{- $env := include "enrichq.vendorKeyEnv" .name }}
{{- $ks := .keySecret | default dict }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef: {name: {{ $ks.name | default $secret }}, key: {{ $ks.key | default $env }}, optional: true}
{{- end -}}
{{- end -}}

{{/* The vendors file's mount and volume, when vendors are set. */}}
{{- define "enrichq.vendorsMount" -}}
{{- if .Values.vendors }}
- {name: vendors, mountPath: /etc/enrichq/vendors, readOnly: true}
{{- end -}}
{{- end -}}
{{- define "enrichq.vendorsVolume" -}}
{{- if .Values.vendors }}
- name: vendors
  configMap:
    name: {{ include "enrichq.fullname" . }}-vendors
{{- end -}}
{{- end -}}

{{/* The Secret's keys a service reads, each an env entry (optional: a key the Secret lacks is
unset). Not envFrom: a Secret may hold the migration Job's key, which no service may see. */}}
{{- define "enrichq.secretEnv" -}}
{{- $name := include "enrichq.secretName" . -}}
{{- range $k := splitList "," (include "enrichq.serviceKeys" .) }}
- name: {{ $k }}
  valueFrom:
    secretKeyRef: {name: {{ $name }}, key: {{ $k }}, optional: true}
{{- end -}}
{{- end -}}

{{/* Restart the pods when the configuration changes. */}}
{{- define "enrichq.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if .Values.vendors }}
checksum/vendors: {{ include (print .Template.BasePath "/vendors-configmap.yaml") . | sha256sum }}
{{- end }}
{{- if not .Values.secrets.existingSecret }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end -}}

{{/* Prometheus' scrape annotations of a pod: call with (dict "root" $ "port" N). */}}
{{- define "enrichq.scrapeAnnotations" -}}
{{- if .root.Values.metrics.annotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* The probes of a process on its port name: liveness on /healthz, readiness on /readyz. */}}
{{- define "enrichq.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: {{ . }}}
  periodSeconds: 5
  timeoutSeconds: 6
  failureThreshold: 2
{{- end -}}

{{/* Checks of the values a render cannot do without. */}}
{{- define "enrichq.validate" -}}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.create.DATABASE_URL) -}}
{{- fail "secrets: set secrets.existingSecret, or secrets.create.DATABASE_URL (and the other keys)" -}}
{{- end -}}
{{- if .Values.vendors -}}
{{- if .Values.secrets.create.ENRICHQ_VENDOR_KEY -}}
{{- fail "secrets.create.ENRICHQ_VENDOR_KEY is set with vendors: the vendors file names every vendor and its key (VENDOR_KEY_<NAME>); leave it out" -}}
{{- end -}}
{{- $names := list -}}
{{- range $i, $v := .Values.vendors -}}
{{- if not $v.name -}}{{- fail (printf "vendors[%d]: name is required" $i) -}}{{- end -}}
{{- if has $v.name $names -}}{{- fail (printf "vendors[%d]: the name %q is taken by another vendor" $i $v.name) -}}{{- end -}}
{{- if hasKey $v "key_env" -}}{{- fail (printf "vendors[%d] (%s): no key_env: the key comes from keySecret (default the chart's Secret, key %s)" $i $v.name (include "enrichq.vendorKeyEnv" $v.name)) -}}{{- end -}}
{{- $names = append $names $v.name -}}
{{- end -}}
{{- else -}}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.create.ENRICHQ_VENDOR_KEY) -}}
{{- fail "secrets: secrets.create.ENRICHQ_VENDOR_KEY is required (the workers' vendor key), or set vendors" -}}
{{- end -}}
{{- if not .Values.config.vendor.url -}}
{{- fail "config.vendor.url is required (the vendor's base URL), or set vendors" -}}
{{- end -}}
{{- end -}}
{{- if has (include "enrichq.migrateKey" .) .Values.secrets.extraKeys -}}
{{- fail "secrets.extraKeys: ENRICHQ_MIGRATE_DATABASE_URL is the migration Job's alone; no service may read it" -}}
{{- end -}}
{{- if and (not .Values.migrations.enabled) (index .Values.secrets.create (include "enrichq.migrateKey" .)) -}}
{{- fail "secrets.create.ENRICHQ_MIGRATE_DATABASE_URL needs migrations.enabled: the migration Job is the one process that reads it" -}}
{{- end -}}
{{- if .Values.redis.sentinel.enabled -}}
{{- if or (not .Values.redis.sentinel.masterName) (not .Values.redis.sentinel.addresses) -}}
{{- fail "redis.sentinel: masterName and addresses are required when enabled" -}}
{{- end -}}
{{- end -}}
{{- end -}}

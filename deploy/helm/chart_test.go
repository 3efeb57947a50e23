// Package helm tests the chart in enrichq/ with Helm's own Go packages: the
// linter, and the engine that `helm template` runs. It is a module of its
// own so that Helm's dependencies (client-go and the Kubernetes API types)
// stay out of enrichq's: `make helm-check` runs it.
package helm

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "enrichq"

// required are the least values an install needs.
func required() map[string]any {
	return map[string]any{
		"secrets": map[string]any{"create": map[string]any{
			"DATABASE_URL":       "postgres://enrichq:pw@pg-0.pg:5432,pg-1.pg:5432/enrichq?target_session_attrs=read-write",
			"ENRICHQ_VENDOR_KEY": "vendor-key",
		}},
		"config": map[string]any{"vendor": map[string]any{"url": "https://vendor.example"}},
	}
}

// with returns required() with the overrides of path=value pairs
// ("worker.autoscaling.enabled", true).
func with(pairs ...any) map[string]any {
	v := required()
	for i := 0; i < len(pairs); i += 2 {
		set(v, strings.Split(pairs[i].(string), "."), pairs[i+1])
	}
	return v
}

func set(m map[string]any, path []string, v any) {
	if len(path) == 1 {
		m[path[0]] = v
		return
	}
	next, ok := m[path[0]].(map[string]any)
	if !ok {
		next = map[string]any{}
		m[path[0]] = next
	}
	set(next, path[1:], v)
}

// object is one rendered object: its kind, name, hook and YAML.
type object struct {
	Kind, Name, Hook, Source string
	YAML                     []byte
}

func (o object) String() string { return o.Kind + "/" + o.Name }

// render runs what `helm template prod ./enrichq -n enrichq` runs.
func render(t *testing.T, vals map[string]any) ([]object, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "prod", Namespace: "enrichq", IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	var out []object
	for name, body := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		for _, doc := range releaseutil.SplitManifests(body) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name        string            `json:"name"`
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if head.Kind == "" {
				continue
			}
			out = append(out, object{Kind: head.Kind, Name: head.Metadata.Name, Hook: head.Metadata.Annotations["helm.sh/hook"],
				Source: name, YAML: []byte(doc)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func mustRender(t *testing.T, vals map[string]any) []object {
	t.Helper()
	objs, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	t.Fatalf("no %s/%s in %v", kind, name, objs)
	return object{}
}

// decode reads an object into its Kubernetes type, refusing unknown fields:
// a misspelt or misplaced field fails here rather than in a cluster.
func decode[T any](t *testing.T, o object) T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(o.YAML, &v); err != nil {
		t.Fatalf("%s (%s): %v\n%s", o, o.Source, err, o.YAML)
	}
	return v
}

func TestLint(t *testing.T) {
	t.Parallel()
	for name, vals := range map[string]map[string]any{
		"required":   required(),
		"everything": everything(),
	} {
		l := lint.AllWithKubeVersion(chartDir, vals, "enrichq", nil)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", name, m)
			}
		}
	}
}

// everything turns every option on.
func everything() map[string]any {
	return with("redis.sentinel.enabled", true, "redis.sentinel.masterName", "enrichq",
		"redis.sentinel.addresses", []any{"sentinel-0.sentinel:26379", "sentinel-1.sentinel:26379", "sentinel-2.sentinel:26379"},
		"worker.autoscaling.enabled", true, "metrics.serviceMonitor.enabled", true, "networkPolicy.enabled", true,
		"config.extraEnv", map[string]any{"GOGC": "400"})
}

// The objects of an install with the defaults, each valid for its
// Kubernetes type; printed as `helm template` would list them.
func TestTemplateObjects(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, required())
	var got []string
	for _, o := range objs {
		s := o.String()
		if o.Hook != "" {
			s += " (hook " + o.Hook + ")"
		}
		got = append(got, s)
	}
	t.Logf("helm template prod ./enrichq, the required values:\n  %s", strings.Join(got, "\n  "))
	want := []string{
		"ConfigMap/prod-enrichq",
		"Deployment/prod-enrichq-api",
		"Deployment/prod-enrichq-scheduler",
		"Deployment/prod-enrichq-worker",
		"Job/prod-enrichq-migrate (hook pre-install,pre-upgrade)",
		"PodDisruptionBudget/prod-enrichq-api",
		"PodDisruptionBudget/prod-enrichq-scheduler",
		"PodDisruptionBudget/prod-enrichq-worker",
		"Secret/prod-enrichq (hook pre-install,pre-upgrade)",
		"Service/prod-enrichq-api",
		"ServiceAccount/prod-enrichq",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("objects:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, o := range objs {
		switch o.Kind {
		case "Deployment":
			decode[appsv1.Deployment](t, o)
		case "Service":
			decode[corev1.Service](t, o)
		case "ConfigMap":
			decode[corev1.ConfigMap](t, o)
		case "Secret":
			decode[corev1.Secret](t, o)
		case "ServiceAccount":
			decode[corev1.ServiceAccount](t, o)
		case "Job":
			decode[batchv1.Job](t, o)
		case "PodDisruptionBudget":
			decode[policyv1.PodDisruptionBudget](t, o)
		default:
			t.Errorf("%s: not checked against its type", o)
		}
	}
}

// Every Deployment probes /healthz (liveness, startup) and /readyz
// (readiness) on a port its container declares, and the process listens
// there: the api on ENRICHQ_API_ADDR, the worker and the scheduler on the
// internal listener of ENRICHQ_METRICS_ADDR. Each PodDisruptionBudget
// selects its Deployment's pods, and each pod its Secret and ConfigMap.
func TestDeploymentsProbesAndBudgets(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, required())
	listens := map[string]string{"api": "ENRICHQ_API_ADDR", "worker": "ENRICHQ_METRICS_ADDR", "scheduler": "ENRICHQ_METRICS_ADDR"}
	for _, component := range []string{"api", "worker", "scheduler"} {
		d := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-"+component))
		pod := d.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: %d containers", component, len(pod.Containers))
		}
		c := pod.Containers[0]
		if len(c.Command) != 1 || c.Command[0] != "/usr/local/bin/"+component {
			t.Errorf("%s runs %v", component, c.Command)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		for probe, want := range map[string]struct {
			p    *corev1.Probe
			path string
		}{"liveness": {c.LivenessProbe, "/healthz"}, "startup": {c.StartupProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
			if want.p == nil || want.p.HTTPGet == nil {
				t.Errorf("%s: no %s probe", component, probe)
				continue
			}
			g := want.p.HTTPGet
			port, ok := ports[g.Port.StrVal]
			if g.Path != want.path || !ok {
				t.Errorf("%s: %s probe on %s port %q (declared %v)", component, probe, g.Path, g.Port.String(), ports)
				continue
			}
			if addr := env[listens[component]]; addr != fmt.Sprintf("0.0.0.0:%d", port) {
				t.Errorf("%s: its %s probe is on port %d, but %s=%q", component, probe, port, listens[component], addr)
			}
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources %+v", component, c.Resources)
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: the root filesystem is writable", component)
		}
		var from []string
		for _, f := range c.EnvFrom {
			switch {
			case f.SecretRef != nil:
				from = append(from, "Secret/"+f.SecretRef.Name)
			case f.ConfigMapRef != nil:
				from = append(from, "ConfigMap/"+f.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Name == "DATABASE_URL" {
				from = append(from, "Secret/"+e.ValueFrom.SecretKeyRef.Name+"["+e.ValueFrom.SecretKeyRef.Key+"]")
			}
		}
		if slices.Sort(from); !slices.Equal(from, []string{"ConfigMap/prod-enrichq", "Secret/prod-enrichq[DATABASE_URL]"}) {
			t.Errorf("%s: environment from %v", component, from)
		}
		if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds <= 30 {
			t.Errorf("%s: the grace period does not cover the 30 s graceful stop", component)
		}
		pdb := decode[policyv1.PodDisruptionBudget](t, find(t, objs, "PodDisruptionBudget", "prod-enrichq-"+component))
		if !maps.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) ||
			!maps.Equal(d.Spec.Selector.MatchLabels, subset(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)) {
			t.Errorf("%s: the budget selects %v, the Deployment %v, its pods are %v", component, pdb.Spec.Selector.MatchLabels,
				d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
		}
		if a := d.Spec.Template.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] == "" {
			t.Errorf("%s: scrape annotations %v", component, a)
		}
	}
	svc := decode[corev1.Service](t, find(t, objs, "Service", "prod-enrichq-api"))
	api := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-api"))
	if !maps.Equal(svc.Spec.Selector, api.Spec.Selector.MatchLabels) {
		t.Errorf("the api's Service selects %v", svc.Spec.Selector)
	}
}

func subset(labels, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// The migration Job runs `api migrate` as a hook before install and
// upgrade, after the Secret it reads (a hook of lower weight); the
// services then do not migrate. Without the Job the api migrates.
func TestMigrations(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, required())
	jo := find(t, objs, "Job", "prod-enrichq-migrate")
	job := decode[batchv1.Job](t, jo)
	secret := decode[corev1.Secret](t, find(t, objs, "Secret", "prod-enrichq"))
	if job.Annotations["helm.sh/hook-weight"] >= secret.Annotations["helm.sh/hook-weight"] &&
		!strings.HasPrefix(secret.Annotations["helm.sh/hook-weight"], "-") {
		t.Errorf("the Job (weight %s) may run before its Secret (weight %s)", job.Annotations["helm.sh/hook-weight"],
			secret.Annotations["helm.sh/hook-weight"])
	}
	c := job.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/usr/local/bin/api", "migrate"}) || secretKeys(c)["DATABASE_URL"] != "prod-enrichq" {
		t.Errorf("the migration runs %v with %+v", c.Command, c.Env)
	}
	if secret.StringData["DATABASE_URL"] == "" || secret.StringData["ENRICHQ_API_KEYS"] != "" {
		t.Errorf("the Secret holds %v", slices.Sorted(maps.Keys(secret.StringData)))
	}
	cm := decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq"))
	if cm.Data["ENRICHQ_MIGRATE"] != "false" {
		t.Errorf("with the Job, ENRICHQ_MIGRATE=%q", cm.Data["ENRICHQ_MIGRATE"])
	}

	objs = mustRender(t, with("migrations.enabled", false))
	for _, o := range objs {
		if o.Kind == "Job" {
			t.Errorf("migrations off, yet %s", o)
		}
	}
	cm = decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq"))
	if cm.Data["ENRICHQ_MIGRATE"] != "true" {
		t.Errorf("without the Job, ENRICHQ_MIGRATE=%q", cm.Data["ENRICHQ_MIGRATE"])
	}

	// An existing Secret: the chart makes none, and every process reads it.
	objs = mustRender(t, map[string]any{"secrets": map[string]any{"existingSecret": "enrichq-prod"},
		"config": map[string]any{"vendor": map[string]any{"url": "https://vendor.example"}}})
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("an existing secret, yet %s", o)
		}
	}
	job = decode[batchv1.Job](t, find(t, objs, "Job", "prod-enrichq-migrate"))
	if secretKeys(job.Spec.Template.Spec.Containers[0])["DATABASE_URL"] != "enrichq-prod" {
		t.Errorf("the Job reads %+v", job.Spec.Template.Spec.Containers[0].Env)
	}
}

// Every option on: Sentinel in the ConfigMap, the workers' autoscaler on
// the queue's depth (the Deployment then leaves replicas to it), and a
// ServiceMonitor and a metrics Service per component.
func TestOptions(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, everything())
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	t.Logf("helm template prod ./enrichq, every option on:\n  %s", strings.Join(got, "\n  "))
	cm := decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq"))
	if cm.Data["ENRICHQ_REDIS_SENTINELS"] != "sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379" ||
		cm.Data["ENRICHQ_REDIS_MASTER"] != "enrichq" || cm.Data["GOGC"] != "400" || cm.Data["ENRICHQ_REDIS_ALLOW_EVICTION"] != "false" {
		t.Errorf("ConfigMap %v", cm.Data)
	}
	hpa := decode[autoscalingv2.HorizontalPodAutoscaler](t, find(t, objs, "HorizontalPodAutoscaler", "prod-enrichq-worker"))
	m := hpa.Spec.Metrics[0]
	if hpa.Spec.ScaleTargetRef.Name != "prod-enrichq-worker" || m.Type != autoscalingv2.ExternalMetricSourceType ||
		m.External.Metric.Name != "enrichq_queue_pending" || m.External.Metric.Selector.MatchLabels["queue"] != "enrichq" ||
		m.External.Target.AverageValue.String() != "20" || hpa.Spec.MaxReplicas != 6 {
		t.Errorf("HPA %+v", hpa.Spec)
	}
	if w := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-worker")); w.Spec.Replicas != nil {
		t.Errorf("autoscaled, yet the worker Deployment sets %d replicas", *w.Spec.Replicas)
	}
	for _, component := range []string{"api", "worker", "scheduler"} {
		svc := decode[corev1.Service](t, find(t, objs, "Service", "prod-enrichq-"+component+"-metrics"))
		sm := find(t, objs, "ServiceMonitor", "prod-enrichq-"+component)
		var mon struct {
			Spec struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				Endpoints []struct {
					Port string `json:"port"`
					Path string `json:"path"`
				} `json:"endpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(sm.YAML, &mon); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(mon.Spec.Selector.MatchLabels, subset(svc.Labels, mon.Spec.Selector.MatchLabels)) ||
			len(mon.Spec.Endpoints) != 1 || mon.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name || mon.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("%s: the ServiceMonitor %+v does not scrape the Service %v %+v", component, mon.Spec, svc.Labels, svc.Spec.Ports)
		}
	}
}

// A render without what enrichq cannot run without fails, saying what; so
// does a value of the wrong type or a misspelt key (values.schema.json).
func TestRequiredValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{}, "secrets.existingSecret, or secrets.create.DATABASE_URL"},
		{with("secrets.create.ENRICHQ_VENDOR_KEY", ""), "ENRICHQ_VENDOR_KEY is required"},
		{with("config.vendor.url", ""), "config.vendor.url is required"},
		{with("redis.sentinel.enabled", true), "redis.sentinel: masterName and addresses"},
		// values.schema.json
		{with("worker.replicas", "two"), "/worker/replicas"},
		{with("worker.concurrency", 0), "/worker/concurrency"},
		{with("redis.sentinel.addresses", []any{"sentinel-0"}), "/redis/sentinel/addresses/0"},
		{with("workers", map[string]any{"replicas": 3}), "workers"},
		{with("secrets.create.database_url", "postgres://x"), "database_url"},
		{with("secrets.extraKeys", []any{"ENRICHQ_PDL_KEY", "ENRICHQ_MIGRATE_DATABASE_URL"}), "the migration Job's alone"},
		{with("migrations.enabled", false, "secrets.create.ENRICHQ_MIGRATE_DATABASE_URL", "postgres://owner@pg/enrichq"), "needs migrations.enabled"},
		{with("networkPolicy.metricsFrom", "monitoring"), "/networkPolicy/metricsFrom"},
	} {
		_, err := render(t, tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.vals, err, tc.want)
		}
	}
}

// secretKeys maps each variable c takes from a Secret's key to the Secret.
func secretKeys(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.ValueFrom.SecretKeyRef.Key] = e.ValueFrom.SecretKeyRef.Name
		}
	}
	return out
}

const ownerURL = "postgres://enrichq_owner:ownerpw@pg-0.pg:5432/enrichq?sslmode=require"

// The owner's URL (ENRICHQ_MIGRATE_DATABASE_URL) reaches the migration Job
// and nothing else: no service Deployment names the key, takes the whole
// Secret (envFrom), or holds the URL, whether the chart makes the Secret or
// it is an existing one; the services read their own keys one by one.
func TestMigrateURLOnlyInTheJob(t *testing.T) {
	t.Parallel()
	for name, vals := range map[string]map[string]any{
		"created": with("secrets.create.ENRICHQ_MIGRATE_DATABASE_URL", ownerURL, "secrets.create.ENRICHQ_PDL_KEY", "pdl-key"),
		"existing": {"secrets": map[string]any{"existingSecret": "enrichq-prod", "extraKeys": []any{"ENRICHQ_PDL_KEY"}},
			"config": map[string]any{"vendor": map[string]any{"url": "https://vendor.example"}}},
		"everything": merge(everything(), "secrets.create.ENRICHQ_MIGRATE_DATABASE_URL", ownerURL),
	} {
		objs := mustRender(t, vals)
		secretName := "prod-enrichq"
		if name == "existing" {
			secretName = "enrichq-prod"
		}
		deployments := 0
		for _, o := range objs {
			if o.Kind != "Deployment" {
				continue
			}
			deployments++
			if strings.Contains(string(o.YAML), "ENRICHQ_MIGRATE_DATABASE_URL") || strings.Contains(string(o.YAML), "ownerpw") {
				t.Errorf("%s: %s names the migration key or holds the owner's URL", name, o)
			}
			d := decode[appsv1.Deployment](t, o)
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, f := range c.EnvFrom {
					if f.SecretRef != nil {
						t.Errorf("%s: %s takes the whole Secret %s", name, o, f.SecretRef.Name)
					}
				}
				keys := secretKeys(c)
				if keys["DATABASE_URL"] != secretName || keys["ENRICHQ_VENDOR_KEY"] != secretName || (name != "everything" && keys["ENRICHQ_PDL_KEY"] != secretName) {
					t.Errorf("%s: %s reads the keys %v", name, o, keys)
				}
			}
		}
		if deployments != 3 {
			t.Fatalf("%s: %d Deployments", name, deployments)
		}
		job := decode[batchv1.Job](t, find(t, objs, "Job", "prod-enrichq-migrate"))
		keys := secretKeys(job.Spec.Template.Spec.Containers[0])
		if keys["ENRICHQ_MIGRATE_DATABASE_URL"] != secretName || keys["DATABASE_URL"] != secretName || len(keys) != 2 {
			t.Errorf("%s: the migration Job reads %v", name, keys)
		}
		if name == "created" {
			if s := decode[corev1.Secret](t, find(t, objs, "Secret", "prod-enrichq")); s.StringData["ENRICHQ_MIGRATE_DATABASE_URL"] != ownerURL {
				t.Errorf("the Secret lacks the owner's URL: %v", slices.Sorted(maps.Keys(s.StringData)))
			}
		}
	}
}

// merge is v with the overrides of path=value pairs.
func merge(v map[string]any, pairs ...any) map[string]any {
	for i := 0; i < len(pairs); i += 2 {
		set(v, strings.Split(pairs[i].(string), "."), pairs[i+1])
	}
	return v
}

// The public Service exposes the API's port alone: never the internal
// listener (/metrics, /debug/pprof/), which the api binds apart.
func TestPublicServiceExposesNoMetrics(t *testing.T) {
	t.Parallel()
	for _, vals := range []map[string]any{required(), everything()} {
		objs := mustRender(t, vals)
		svc := decode[corev1.Service](t, find(t, objs, "Service", "prod-enrichq-api"))
		api := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-api"))
		c := api.Spec.Template.Spec.Containers[0]
		var metricsPort int32
		for _, p := range c.Ports {
			if p.Name == "metrics" {
				metricsPort = p.ContainerPort
			}
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if metricsPort == 0 || env["ENRICHQ_METRICS_ADDR"] != fmt.Sprintf("0.0.0.0:%d", metricsPort) || env["ENRICHQ_API_ADDR"] == env["ENRICHQ_METRICS_ADDR"] {
			t.Errorf("the api's listeners: %v, metrics port %d", env, metricsPort)
		}
		if len(svc.Spec.Ports) != 1 {
			t.Errorf("the public Service has %d ports", len(svc.Spec.Ports))
		}
		for _, p := range svc.Spec.Ports {
			if p.Name != "http" || p.TargetPort.String() != "http" || p.Port == metricsPort || p.TargetPort.String() == "metrics" ||
				p.TargetPort.IntValue() == int(metricsPort) {
				t.Errorf("the public Service exposes %+v", p)
			}
		}
	}
}

// networkPolicy.enabled: a NetworkPolicy per component over its pods; the
// api's port from apiFrom, the metrics port from metricsFrom alone, and
// nothing when metricsFrom is empty. Off (the default): none.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	for _, o := range mustRender(t, required()) {
		if o.Kind == "NetworkPolicy" {
			t.Errorf("networkPolicy off, yet %s", o)
		}
	}
	monitoring := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
	ingress := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress"}}}
	for _, tc := range []struct {
		name string
		vals map[string]any
	}{
		{"closed", with("networkPolicy.enabled", true)},
		{"from", with("networkPolicy.enabled", true, "networkPolicy.metricsFrom", []any{monitoring}, "networkPolicy.apiFrom", []any{ingress})},
	} {
		objs := mustRender(t, tc.vals)
		for _, component := range []string{"api", "worker", "scheduler"} {
			np := decode[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", "prod-enrichq-"+component))
			d := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-"+component))
			if !maps.Equal(np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
				t.Errorf("%s %s: selects %v, types %v", tc.name, component, np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
			}
			ports := map[string]int32{}
			for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
				ports[p.Name] = p.ContainerPort
			}
			open := map[int32][]networkingv1.NetworkPolicyPeer{}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					open[int32(p.Port.IntValue())] = rule.From
				}
			}
			from, metricsOpen := open[ports["metrics"]]
			switch tc.name {
			case "closed":
				if metricsOpen {
					t.Errorf("%s: metricsFrom empty, yet the metrics port is open to %v", component, from)
				}
			case "from":
				if !metricsOpen || len(from) != 1 || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
					t.Errorf("%s: the metrics port is open to %v (%v)", component, from, metricsOpen)
				}
			}
			apiFrom, apiOpen := open[ports["http"]]
			switch {
			case component != "api" && len(np.Spec.Ingress) > 1:
				t.Errorf("%s: ingress %+v", component, np.Spec.Ingress)
			case component == "api" && !apiOpen:
				t.Errorf("the api's port is closed: %+v", np.Spec.Ingress)
			case component == "api" && tc.name == "closed" && len(apiFrom) != 0:
				t.Errorf("apiFrom empty, yet the api's port is open to %v only", apiFrom)
			case component == "api" && tc.name == "from" && (len(apiFrom) != 1 || apiFrom[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "ingress"):
				t.Errorf("the api's port is open to %v", apiFrom)
			}
		}
	}
}

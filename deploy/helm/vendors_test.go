package helm

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// vendorsValues are the least values with a vendors list: three kinds,
// one key from another Secret.
func vendorsValues() map[string]any {
	return map[string]any{
		"secrets": map[string]any{"create": map[string]any{
			"DATABASE_URL":     "postgres://enrichq:pw@pg/enrichq",
			"VENDOR_KEY_ACME":  "acme-key",
			"VENDOR_KEY_PDL_1": "pdl-key",
		}},
		"vendors": []any{
			map[string]any{"name": "acme", "kind": "seed", "url": "https://api.acme.example", "rate": 10, "monthly_credits": 50000},
			map[string]any{"name": "pdl-1", "kind": "pdl", "url": "https://api.peopledatalabs.com", "rate": 16.6, "credit_value": 3},
			map[string]any{"name": "finder", "kind": "hunter", "url": "https://api.hunter.io", "rate": 10, "credit_value": 2,
				"verify_credit_value": 1, "keySecret": map[string]any{"name": "hunter-credentials", "key": "api-key"}},
		},
		"vendorOrder": []any{"finder", "acme"},
	}
}

// The values' vendors are rendered to a vendors file mounted in every
// service, each vendor's key read from its Secret into its key_env; the
// one-vendor variables are gone.
func TestVendorsFile(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, vendorsValues())
	cm := decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq-vendors"))
	var file struct {
		Vendors []map[string]any `json:"vendors"`
		Order   []string         `json:"order"`
		Explore float64          `json:"explore"`
	}
	if err := yaml.UnmarshalStrict([]byte(cm.Data["vendors.yaml"]), &file); err != nil {
		t.Fatalf("vendors.yaml: %v\n%s", err, cm.Data["vendors.yaml"])
	}
	if len(file.Vendors) != 3 || strings.Join(file.Order, ",") != "finder,acme" || file.Explore != 0.05 {
		t.Fatalf("vendors.yaml:\n%s", cm.Data["vendors.yaml"])
	}
	wantEnv := map[string]string{"acme": "VENDOR_KEY_ACME", "pdl-1": "VENDOR_KEY_PDL_1", "finder": "VENDOR_KEY_FINDER"}
	for _, v := range file.Vendors {
		name, _ := v["name"].(string)
		if v["key_env"] != wantEnv[name] || v["keySecret"] != nil {
			t.Errorf("vendor %s: key_env %v, keySecret %v", name, v["key_env"], v["keySecret"])
		}
	}
	if v := file.Vendors[2]; v["kind"] != "hunter" || v["verify_credit_value"] != float64(1) || v["credit_value"] != float64(2) {
		t.Errorf("the hunter entry %v", v)
	}
	env := decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq"))
	if env.Data["ENRICHQ_VENDORS_FILE"] != "/etc/enrichq/vendors/vendors.yaml" || env.Data["ENRICHQ_VENDOR_URL"] != "" {
		t.Errorf("config: %v", env.Data)
	}
	for _, name := range []string{"prod-enrichq-api", "prod-enrichq-worker", "prod-enrichq-scheduler"} {
		d := decode[appsv1.Deployment](t, find(t, objs, "Deployment", name))
		c := d.Spec.Template.Spec.Containers[0]
		refs := map[string]corev1.SecretKeySelector{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				if _, dup := refs[e.Name]; dup {
					t.Errorf("%s: %s set twice", name, e.Name)
				}
				refs[e.Name] = *e.ValueFrom.SecretKeyRef
			}
		}
		if r := refs["VENDOR_KEY_ACME"]; r.Name != "prod-enrichq" || r.Key != "VENDOR_KEY_ACME" {
			t.Errorf("%s: VENDOR_KEY_ACME from %+v", name, r)
		}
		if r := refs["VENDOR_KEY_FINDER"]; r.Name != "hunter-credentials" || r.Key != "api-key" {
			t.Errorf("%s: VENDOR_KEY_FINDER from %+v", name, r)
		}
		if _, ok := refs["ENRICHQ_VENDOR_KEY"]; ok {
			t.Errorf("%s reads ENRICHQ_VENDOR_KEY with a vendors file (the worker would refuse both)", name)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == "vendors" && m.MountPath == "/etc/enrichq/vendors" && m.ReadOnly
		}
		fromCM := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			fromCM = fromCM || v.Name == "vendors" && v.ConfigMap != nil && v.ConfigMap.Name == "prod-enrichq-vendors"
		}
		if !mounted || !fromCM {
			t.Errorf("%s: the vendors file is not mounted (%v, %v)", name, c.VolumeMounts, d.Spec.Template.Spec.Volumes)
		}
		if d.Spec.Template.Annotations["checksum/vendors"] == "" {
			t.Errorf("%s: no checksum of the vendors file: its pods would not restart on a change", name)
		}
	}
	// Without vendors, nothing of it.
	for _, o := range mustRender(t, required()) {
		if o.Name == "prod-enrichq-vendors" || strings.Contains(string(o.YAML), "VENDOR_KEY_") {
			t.Errorf("%s rendered without vendors", o)
		}
	}
}

func TestVendorsValuesRefused(t *testing.T) {
	t.Parallel()
	withVendors := func(path string, v any) map[string]any {
		vals := vendorsValues()
		set(vals, strings.Split(path, "."), v)
		return vals
	}
	for _, tc := range []struct {
		vals map[string]any
		want string
	}{
		{withVendors("secrets.create.ENRICHQ_VENDOR_KEY", "k"), "ENRICHQ_VENDOR_KEY is set with vendors"},
		{withVendors("vendors", []any{map[string]any{"name": "acme", "kind": "seed", "url": "https://a.example", "rate": 1, "key_env": "X"}}), "no key_env"},
		{withVendors("vendors", []any{map[string]any{"name": "a", "kind": "seed", "url": "https://a.example", "rate": 1},
			map[string]any{"name": "a", "kind": "pdl", "url": "https://b.example", "rate": 1}}), "taken by another vendor"},
		{withVendors("vendors", []any{map[string]any{"name": "Acme", "kind": "seed", "url": "https://a.example", "rate": 1}}), "/vendors/0/name"},
		{withVendors("vendors", []any{map[string]any{"name": "acme", "kind": "seed", "url": "https://a.example"}}), "rate"},
		{withVendors("vendorExplore", 0.9), "/vendorExplore"},
	} {
		_, err := render(t, tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.vals["vendors"], err, tc.want)
		}
	}
}

package helm

import (
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// What one upload slot of the api may take at the default upload limit,
// as values.yaml states it (docs/uploads.md, "Limits"), and what the rest
// of the api takes.
const (
	slotMemory = 192 << 20
	slotTmp    = 160 << 20
	apiMemory  = 256 << 20
)

// The api's upload slots, at the chart's defaults, fit its pod: slots x
// what each may take within the memory limit and the spool's size.
func TestUploadSlotsFitThePod(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, required())
	cm := decode[corev1.ConfigMap](t, find(t, objs, "ConfigMap", "prod-enrichq"))
	slots, err := strconv.Atoi(cm.Data["ENRICHQ_UPLOADS_TOTAL"])
	if err != nil || slots < 1 {
		t.Fatalf("ENRICHQ_UPLOADS_TOTAL = %q: the chart must set the slots", cm.Data["ENRICHQ_UPLOADS_TOTAL"])
	}
	if per, err := strconv.Atoi(cm.Data["ENRICHQ_UPLOADS_PER_TENANT"]); err != nil || per < 1 || per > slots {
		t.Fatalf("ENRICHQ_UPLOADS_PER_TENANT = %q, of %d slots", cm.Data["ENRICHQ_UPLOADS_PER_TENANT"], slots)
	}
	api := decode[appsv1.Deployment](t, find(t, objs, "Deployment", "prod-enrichq-api"))
	mem := api.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	if need := resource.NewQuantity(int64(slots)*slotMemory+apiMemory, resource.BinarySI); mem.IsZero() || mem.Cmp(*need) < 0 {
		t.Errorf("memory limit %s < %d slots x %d MiB + %d MiB", mem.String(), slots, slotMemory>>20, apiMemory>>20)
	}
	var spool *resource.Quantity
	for _, v := range api.Spec.Template.Spec.Volumes {
		if v.Name == "spool" && v.EmptyDir != nil {
			spool = v.EmptyDir.SizeLimit
		}
	}
	if need := resource.NewQuantity(int64(slots)*slotTmp, resource.BinarySI); spool == nil || spool.Cmp(*need) < 0 {
		t.Errorf("spool %v < %d slots x %d MiB", spool, slots, slotTmp>>20)
	}
}

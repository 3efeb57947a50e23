package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/vendororder"
)

type noRates struct{}

func (noRates) AddVendorRates(context.Context, []store.VendorRate) error { return nil }
func (noRates) VendorRates(context.Context) ([]store.VendorRate, error)  { return nil, nil }
func (noRates) TenantVendorRates(context.Context, string) ([]store.VendorRate, error) {
	return nil, nil
}

// order auto (no list) is the learned order; a list is that list.
func TestVendorOrderOfTheFile(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	list := []config.VendorSpec{{Name: "acme", Kind: config.VendorSeed, URL: "https://acme.example", CreditValue: 1, PriorHitRate: 0.5}}
	o, stop, err := vendorOrder(ctx, config.Vendors{List: list, Explore: 0.05}, noRates{}, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, ok := o.(*vendororder.Auto); !ok {
		t.Errorf("order auto: %T; want *vendororder.Auto", o)
	}
	o, stop, err = vendorOrder(ctx, config.Vendors{List: list, Order: []string{"acme"}}, noRates{}, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if l, ok := o.(vendororder.Listed); !ok || len(l.Names) != 1 || l.Names[0] != "acme" {
		t.Errorf("order [acme]: %#v; want vendororder.Listed{acme}", o)
	}
}

package main

import (
	"reflect"
	"testing"
)

func TestStoreFromSite(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, ok := storeFromSite(env(nil)); ok {
		t.Error("no store in the site, but a store config")
	}
	cfg, ok := storeFromSite(env(map[string]string{
		"SITE_ETCD_ENDPOINTS": "https://10.0.0.5:2379,https://10.0.0.6:2379",
		"SITE_ETCD_CACERT":    "/etc/contiv/store/ca.pem",
		"SITE_ETCD_CERT":      "/etc/contiv/store/cert.pem",
		"SITE_ETCD_KEY":       "/etc/contiv/store/key.pem",
		"ETCD_ENDPOINTS":      "http://wrong:2379", // not the site's
	}))
	if !ok || !reflect.DeepEqual(cfg.EtcdEndpoints, []string{"https://10.0.0.5:2379", "https://10.0.0.6:2379"}) || cfg.ConsulEndpoints != nil {
		t.Errorf("etcd site: %v %+v", ok, cfg)
	}
	if cfg.Auth.EtcdCACert != "/etc/contiv/store/ca.pem" || cfg.Auth.EtcdKey != "/etc/contiv/store/key.pem" {
		t.Errorf("etcd credentials: %+v", cfg.Auth)
	}
	cfg, ok = storeFromSite(env(map[string]string{"SITE_CONSUL_ENDPOINTS": "10.0.0.5:8500", "SITE_CONSUL_TOKEN_FILE": "/etc/contiv/store/consul-token"}))
	if !ok || !reflect.DeepEqual(cfg.ConsulEndpoints, []string{"10.0.0.5:8500"}) || cfg.Auth.ConsulTokenFile == "" {
		t.Errorf("consul site: %v %+v", ok, cfg)
	}
}

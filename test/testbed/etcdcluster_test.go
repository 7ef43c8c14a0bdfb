package testbed

import "testing"

func TestConfigEtcdMembers(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Store: ExternalEtcd, EtcdMembers: 3, Netmasters: 3}, true},
		{Config{Store: ExternalEtcd, EtcdMembers: 1}, true},
		{Config{Store: ExternalEtcd}, true},
		{Config{Store: ExternalEtcd, EtcdMembers: 2}, false},
		{Config{Store: ExternalConsul, EtcdMembers: 3}, false},
		{Config{Store: Embedded, EtcdMembers: 3}, false},
		{Config{Store: ExternalEtcd, EtcdMembers: 3, Netmasters: 4}, false},
	} {
		err := tc.cfg.setDefaults()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: error %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

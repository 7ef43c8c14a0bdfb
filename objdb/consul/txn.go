package consul

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/contiv/netplugin/objdb"
)

var _ objdb.Txner = (*Client)(nil)

// Txn implements objdb.Txner with one consul transaction (/v1/txn): a
// conditioned put is a "cas" (index 0: create-only), a conditioned delete
// a "check-index" then "delete" (consul's delete-cas succeeds on an absent
// key), a check "check-index" or "check-not-exists". Consul rolls the
// transaction back when one fails and lists the failed operations.
func (c *Client) Txn(ctx context.Context, ops []objdb.TxnOp) ([]int64, error) {
	if err := c.checkOpen(); err != nil {
		return nil, fmt.Errorf("txn: %w", err)
	}
	if err := objdb.CheckTxn(ops); err != nil {
		return nil, fmt.Errorf("txn: %w", err)
	}
	var cops api.TxnOps
	var of []int // our op index of each consul op
	add := func(i int, op *api.KVTxnOp) {
		cops = append(cops, &api.TxnOp{KV: op})
		of = append(of, i)
	}
	for i, op := range ops {
		full := c.full(op.Key)
		switch op.Kind {
		case objdb.TxnPut:
			kop := &api.KVTxnOp{Verb: api.KVSet, Key: full, Value: op.Value}
			if op.Value == nil {
				kop.Value = []byte{}
			}
			if op.Conditional() {
				kop.Verb, kop.Index = api.KVCAS, uint64(op.PrevVersion)
			}
			add(i, kop)
		case objdb.TxnDelete, objdb.TxnCheck:
			switch {
			case op.Absent:
				add(i, &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: full})
			case op.PrevVersion > 0:
				add(i, &api.KVTxnOp{Verb: api.KVCheckIndex, Key: full, Index: uint64(op.PrevVersion)})
			}
			if op.Kind == objdb.TxnDelete {
				add(i, &api.KVTxnOp{Verb: api.KVDelete, Key: full})
			}
		}
	}
	what := fmt.Sprintf("txn %q", ops[0].Key)
	ok, resp, uncertain, err := c.txn(ctx, what, cops)
	if err != nil {
		return nil, err
	}
	if !ok {
		conflict := &objdb.TxnConflict{Ops: ops}
		for _, e := range resp.Errors {
			if e.OpIndex < 0 || e.OpIndex >= len(of) || !ops[of[e.OpIndex]].Conditional() {
				return nil, fmt.Errorf("%s: consul refused the transaction: %s", what, txnErrors(resp))
			}
			if !conflict.FailedOp(of[e.OpIndex]) {
				conflict.Failed = append(conflict.Failed, of[e.OpIndex])
			}
		}
		return nil, markUncertain(fmt.Errorf("%s: %w", what, conflict), uncertain)
	}
	vers := make([]int64, len(ops))
	for i, op := range ops {
		if op.Kind != objdb.TxnPut {
			continue
		}
		full := c.full(op.Key)
		for _, r := range resp.Results {
			if r.KV != nil && r.KV.Key == full {
				vers[i] = int64(r.KV.ModifyIndex)
			}
		}
		if vers[i] == 0 {
			return nil, fmt.Errorf("%s: consul transaction returned no result for %q", what, op.Key)
		}
	}
	return vers, nil
}

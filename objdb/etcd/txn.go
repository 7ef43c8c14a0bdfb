package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv/netplugin/objdb"
)

var _ objdb.Txner = (*Client)(nil)

// Txn implements objdb.Txner with one etcd transaction: If holds every
// op's condition, Then its puts and deletes, and Else reads every
// conditioned key, so a conflict names the ops at fault without another
// round trip. Every put of one transaction gets the same mod revision.
func (c *Client) Txn(ctx context.Context, ops []objdb.TxnOp) ([]int64, error) {
	if err := objdb.CheckTxn(ops); err != nil {
		return nil, fmt.Errorf("txn: %w", err)
	}
	var cmps []clientv3.Cmp
	var then, els []clientv3.Op
	var conds []int // op index of each Else read
	for i, op := range ops {
		full := c.full(op.Key)
		switch {
		case op.Absent:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(full), "=", 0))
		case op.PrevVersion > 0:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(full), "=", op.PrevVersion))
		}
		if op.Conditional() {
			els = append(els, clientv3.OpGet(full, clientv3.WithKeysOnly()))
			conds = append(conds, i)
		}
		switch op.Kind {
		case objdb.TxnPut:
			then = append(then, clientv3.OpPut(full, string(op.Value)))
		case objdb.TxnDelete:
			then = append(then, clientv3.OpDelete(full))
		}
	}
	key := ops[0].Key
	var resp *clientv3.TxnResponse
	uncertain, err := c.doWrite(ctx, "txn", key, func(actx context.Context) (err error) {
		resp, err = c.cli.Txn(actx).If(cmps...).Then(then...).Else(els...).Commit()
		return err
	})
	if err != nil {
		return nil, markUncertain(err, uncertain)
	}
	if !resp.Succeeded {
		conflict := &objdb.TxnConflict{Ops: ops}
		for j, r := range resp.Responses {
			op := ops[conds[j]]
			var cur int64
			if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				cur = rr.Kvs[0].ModRevision
			}
			if (op.Absent && cur != 0) || (op.PrevVersion > 0 && cur != op.PrevVersion) {
				conflict.Failed = append(conflict.Failed, conds[j])
			}
		}
		return nil, markUncertain(fmt.Errorf("txn %q: %w", key, conflict), uncertain)
	}
	vers := make([]int64, len(ops))
	for i, op := range ops {
		if op.Kind == objdb.TxnPut {
			vers[i] = resp.Header.Revision
		}
	}
	return vers, nil
}

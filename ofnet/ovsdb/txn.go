package ovsdb

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Row is a table row: column name → value (see value.go for the types).
// Rows read from the cache or returned by select must not be modified.
type Row map[string]any

// Condition is a <condition>: [column, function, value]. Functions are
// "==", "!=", "<", "<=", ">", ">=", "includes", "excludes".
type Condition struct {
	Column   string
	Function string
	Value    any
}

// Eq is the condition column == value.
func Eq(column string, value any) Condition {
	return Condition{Column: column, Function: "==", Value: value}
}

// MarshalJSON encodes [column, function, value].
func (c Condition) MarshalJSON() ([]byte, error) {
	v, err := Encode(c.Value)
	if err != nil {
		return nil, fmt.Errorf("condition on %s: %w", c.Column, err)
	}
	return json.Marshal([]any{c.Column, c.Function, v})
}

// Mutation is a <mutation>: [column, mutator, value]. Mutators are "+=",
// "-=", "*=", "/=", "%=", "insert", "delete".
type Mutation struct {
	Column  string
	Mutator string
	Value   any
}

// MutateInsert adds elements (a Set or Map, or a single atom) to a set or
// map column.
func MutateInsert(column string, value any) Mutation {
	return Mutation{Column: column, Mutator: "insert", Value: value}
}

// MutateDelete removes elements from a set column, or keys (a Set) or
// key/value pairs (a Map) from a map column.
func MutateDelete(column string, value any) Mutation {
	return Mutation{Column: column, Mutator: "delete", Value: value}
}

// MarshalJSON encodes [column, mutator, value].
func (m Mutation) MarshalJSON() ([]byte, error) {
	v, err := Encode(m.Value)
	if err != nil {
		return nil, fmt.Errorf("mutation of %s: %w", m.Column, err)
	}
	return json.Marshal([]any{m.Column, m.Mutator, v})
}

// Operation is one operation of a transaction (RFC 7047 §5.2). Use the
// constructors; fields not used by an operation are ignored.
type Operation struct {
	Op        string
	Table     string
	Row       Row
	Rows      []Row
	Where     []Condition
	Columns   []string
	Mutations []Mutation
	UUIDName  string
	// Timeout (milliseconds) and Until ("==" or "!=") are for wait.
	Timeout *int
	Until   string
	Comment string
	Durable bool
}

// Insert inserts row; uuidName (may be empty) names the new row for
// NamedUUID references later in the same transaction.
func Insert(table string, row Row, uuidName string) Operation {
	return Operation{Op: "insert", Table: table, Row: row, UUIDName: uuidName}
}

// Update sets the columns in row on every row matching where.
func Update(table string, row Row, where ...Condition) Operation {
	return Operation{Op: "update", Table: table, Row: row, Where: where}
}

// Mutate applies mutations to every row matching where.
func Mutate(table string, where []Condition, mutations ...Mutation) Operation {
	return Operation{Op: "mutate", Table: table, Where: where, Mutations: mutations}
}

// Delete deletes every row matching where.
func Delete(table string, where ...Condition) Operation {
	return Operation{Op: "delete", Table: table, Where: where}
}

// Select reads the rows matching where (all columns when columns is nil).
func Select(table string, columns []string, where ...Condition) Operation {
	return Operation{Op: "select", Table: table, Columns: columns, Where: where}
}

// Wait blocks the transaction (at most timeoutMS milliseconds; 0 means
// check once) until the rows matching where, projected to columns, are
// ("==") or are not ("!=") exactly rows.
func Wait(table string, where []Condition, columns []string, until string, rows []Row, timeoutMS int) Operation {
	return Operation{Op: "wait", Table: table, Where: where, Columns: columns, Until: until, Rows: rows, Timeout: &timeoutMS}
}

// Comment adds a comment to the database log.
func Comment(text string) Operation { return Operation{Op: "comment", Comment: text} }

// MarshalJSON encodes the operation with exactly the members its kind
// takes.
func (o Operation) MarshalJSON() ([]byte, error) {
	m := map[string]any{"op": o.Op}
	where := o.Where
	if where == nil {
		where = []Condition{}
	}
	switch o.Op {
	case "insert":
		row, err := encodeRow(o.Row)
		if err != nil {
			return nil, err
		}
		m["table"], m["row"] = o.Table, row
		if o.UUIDName != "" {
			if !idRE.MatchString(o.UUIDName) {
				return nil, fmt.Errorf("%w: invalid uuid-name %q", ErrBadValue, o.UUIDName)
			}
			m["uuid-name"] = o.UUIDName
		}
	case "select":
		m["table"], m["where"] = o.Table, where
		if o.Columns != nil {
			m["columns"] = o.Columns
		}
	case "update":
		row, err := encodeRow(o.Row)
		if err != nil {
			return nil, err
		}
		m["table"], m["where"], m["row"] = o.Table, where, row
	case "mutate":
		muts := o.Mutations
		if muts == nil {
			muts = []Mutation{}
		}
		m["table"], m["where"], m["mutations"] = o.Table, where, muts
	case "delete":
		m["table"], m["where"] = o.Table, where
	case "wait":
		rows := make([]Row, 0, len(o.Rows))
		for _, r := range o.Rows {
			er, err := encodeRow(r)
			if err != nil {
				return nil, err
			}
			rows = append(rows, er)
		}
		cols := o.Columns
		if cols == nil {
			cols = []string{}
		}
		m["table"], m["where"], m["columns"], m["until"], m["rows"] = o.Table, where, cols, o.Until, rows
		if o.Timeout != nil {
			m["timeout"] = *o.Timeout
		}
	case "commit":
		m["durable"] = o.Durable
	case "abort":
	case "comment":
		m["comment"] = o.Comment
	default:
		return nil, fmt.Errorf("ovsdb: unknown operation %q", o.Op)
	}
	return json.Marshal(m)
}

func encodeRow(r Row) (Row, error) {
	out := make(Row, len(r))
	for col, v := range r {
		ev, err := Encode(v)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col, err)
		}
		out[col] = ev
	}
	return out, nil
}

// OpResult is the result of one successful operation.
type OpResult struct {
	// UUID of the row an insert created.
	UUID UUID
	// Count of rows an update, mutate or delete touched.
	Count int
	// Rows a select returned.
	Rows []Row
}

// TxnError is a transaction failure reported by the server for one
// operation, or for the commit as a whole (Index == number of operations).
type TxnError struct {
	// Index of the failed operation.
	Index int
	// Op and Table describe the failed operation ("" for commit errors).
	Op    string
	Table string
	// Err is the RFC 7047 error string, e.g. "constraint violation".
	Err     string
	Details string
}

func (e *TxnError) Error() string {
	what := "commit"
	if e.Op != "" {
		what = fmt.Sprintf("operation %d (%s %s)", e.Index, e.Op, e.Table)
	}
	if e.Details != "" {
		return fmt.Sprintf("ovsdb: transaction %s: %s: %s", what, e.Err, e.Details)
	}
	return fmt.Sprintf("ovsdb: transaction %s: %s", what, e.Err)
}

// Temporary reports whether the same transaction may succeed if retried:
// a wait that timed out, a server out of resources or an I/O error, or a
// "not owner"/cancelled situation. Schema, constraint and referential
// errors are permanent.
func (e *TxnError) Temporary() bool {
	switch e.Err {
	case "timed out", "resources exhausted", "I/O error", "not owner", "canceled", "cancelled", "not leader":
		return true
	}
	return false
}

// IsTemporary reports whether err (anywhere in its chain) is a temporary
// transaction or RPC error, or a lost connection.
func IsTemporary(err error) bool {
	var te *TxnError
	if errors.As(err, &te) {
		return te.Temporary()
	}
	var re *RPCError
	if errors.As(err, &re) {
		return re.Temporary()
	}
	return errors.Is(err, ErrDisconnected)
}

// decodeTxnResult turns a transact result into per-operation results or a
// *TxnError. schema (may be nil) is used to type the rows of selects.
func decodeTxnResult(schema *Schema, ops []Operation, raw json.RawMessage) ([]OpResult, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("%w: transact result is not an array: %v", ErrBadValue, err)
	}
	results := make([]OpResult, len(ops))
	for i, e := range entries {
		var r struct {
			Error   *string           `json:"error"`
			Details string            `json:"details"`
			UUID    json.RawMessage   `json:"uuid"`
			Count   *int              `json:"count"`
			Rows    []json.RawMessage `json:"rows"`
		}
		if len(e) == 0 || string(e) == "null" {
			continue // operations after a failed one are not executed
		}
		if err := json.Unmarshal(e, &r); err != nil {
			return nil, fmt.Errorf("%w: transact result %d: %v", ErrBadValue, i, err)
		}
		if r.Error != nil {
			te := &TxnError{Index: i, Err: *r.Error, Details: r.Details}
			if i < len(ops) {
				te.Op, te.Table = ops[i].Op, ops[i].Table
			}
			return nil, te
		}
		if i >= len(ops) {
			continue
		}
		if len(r.UUID) > 0 {
			v, err := DecodeValue(r.UUID)
			if err != nil {
				return nil, fmt.Errorf("transact result %d: %w", i, err)
			}
			u, ok := v.(UUID)
			if !ok {
				return nil, fmt.Errorf("%w: transact result %d: uuid is %T", ErrBadValue, i, v)
			}
			results[i].UUID = u
		}
		if r.Count != nil {
			results[i].Count = *r.Count
		}
		var ts *TableSchema
		if schema != nil {
			ts = schema.Tables[ops[i].Table]
		}
		for _, rr := range r.Rows {
			row, err := decodeRow(ts, rr)
			if err != nil {
				return nil, fmt.Errorf("transact result %d: %w", i, err)
			}
			results[i].Rows = append(results[i].Rows, row)
		}
	}
	if len(entries) < len(ops) {
		return nil, fmt.Errorf("%w: %d results for %d operations", ErrBadValue, len(entries), len(ops))
	}
	return results, nil
}

// decodeRow decodes a <row> object, typing columns with ts when known.
func decodeRow(ts *TableSchema, data json.RawMessage) (Row, error) {
	var cols map[string]json.RawMessage
	if err := json.Unmarshal(data, &cols); err != nil {
		return nil, fmt.Errorf("%w: row: %v", ErrBadValue, err)
	}
	row := make(Row, len(cols))
	for name, raw := range cols {
		v, err := DecodeValue(raw)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		if ts != nil {
			if ct, ok := ts.column(name); ok {
				if v, err = conform(ct, v); err != nil {
					return nil, fmt.Errorf("column %s: %w", name, err)
				}
			}
		}
		row[name] = v
	}
	return row, nil
}

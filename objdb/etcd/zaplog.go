package etcd

import (
	"slices"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewZapLogger returns a zap logger (the logger etcd's client and server
// libraries take) that forwards entries at or above min to entry. Passing
// zapcore.ErrorLevel keeps etcd's own chatter out of the daemon's log while
// still surfacing its errors. A nil entry yields a no-op logger.
func NewZapLogger(entry *logrus.Entry, min zapcore.Level) *zap.Logger {
	if entry == nil {
		return zap.NewNop()
	}
	return zap.New(&logrusCore{entry: entry, min: min})
}

// logrusCore is a zapcore.Core writing to a logrus entry.
type logrusCore struct {
	entry  *logrus.Entry
	min    zapcore.Level
	fields []zapcore.Field
}

func (c *logrusCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *logrusCore) With(fields []zapcore.Field) zapcore.Core {
	return &logrusCore{entry: c.entry, min: c.min, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *logrusCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *logrusCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	entry := c.entry.WithFields(logrus.Fields(enc.Fields))
	if e.LoggerName != "" {
		entry = entry.WithField("logger", e.LoggerName)
	}
	switch {
	case e.Level >= zapcore.ErrorLevel:
		entry.Error(e.Message)
	case e.Level == zapcore.WarnLevel:
		entry.Warn(e.Message)
	case e.Level == zapcore.InfoLevel:
		entry.Info(e.Message)
	default:
		entry.Debug(e.Message)
	}
	return nil
}

func (c *logrusCore) Sync() error { return nil }

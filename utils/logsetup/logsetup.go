// Package logsetup configures a logrus logger from the daemons' log flags.
package logsetup

import (
	"fmt"
	"log/syslog"
	"net/url"
	"strings"

	"github.com/sirupsen/logrus"
	lsyslog "github.com/sirupsen/logrus/hooks/syslog"
)

// TimestampFormat is the time of every text log line: RFC 3339 with
// microseconds and the zone offset ("2026-11-29T08:30:00.123456+01:00",
// "Z" for UTC), so lines from several hosts and days sort and compare.
// The JSON format uses RFC 3339 too (logrus's default).
const TimestampFormat = "2006-01-02T15:04:05.000000Z07:00"

// Options are the logging flags.
type Options struct {
	Level     string // logrus level name, case-insensitive
	JSON      bool
	Syslog    bool
	SyslogURL string // proto://host:port
	Tag       string // syslog tag: the binary name
}

// Configure applies the options to log. Errors name the flag at fault and
// leave log unchanged.
func Configure(log *logrus.Logger, o Options) error {
	lvl, err := logrus.ParseLevel(strings.ToLower(o.Level))
	if err != nil {
		return fmt.Errorf("invalid --log-level %q: %w", o.Level, err)
	}
	var hook logrus.Hook
	if o.Syslog {
		u, err := url.Parse(o.SyslogURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("invalid --syslog-url %q: want proto://host:port", o.SyslogURL)
		}
		h, err := lsyslog.NewSyslogHook(u.Scheme, u.Host, priority(lvl), o.Tag)
		if err != nil {
			return fmt.Errorf("connect syslog %q: %w", o.SyslogURL, err)
		}
		hook = h
	}
	log.SetLevel(lvl)
	if o.JSON {
		log.SetFormatter(&logrus.JSONFormatter{})
	} else {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: TimestampFormat})
	}
	if hook != nil {
		log.AddHook(hook)
	}
	return nil
}

func priority(l logrus.Level) syslog.Priority {
	switch l {
	case logrus.PanicLevel, logrus.FatalLevel:
		return syslog.LOG_CRIT
	case logrus.ErrorLevel:
		return syslog.LOG_ERR
	case logrus.WarnLevel:
		return syslog.LOG_WARNING
	case logrus.InfoLevel:
		return syslog.LOG_INFO
	}
	return syslog.LOG_DEBUG
}

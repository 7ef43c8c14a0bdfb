package controllers

import (
	"errors"
	"net/http"

	"github.com/contiv/netplugin/contivmodel"
	"github.com/contiv/netplugin/netmaster/ipam"
	"github.com/contiv/netplugin/netmaster/resources"
	"github.com/contiv/netplugin/objdb"
)

// Status classifies the refusals of the allocators for the REST and
// /plugin answers (docs/rest-errors.md); 0 leaves the decision to
// contivmodel.Status. Only errors carrying a client-visible message are
// classified: anything else stays a server fault.
func Status(err error) int {
	var ue *contivmodel.Error
	if !errors.As(err, &ue) {
		return 0
	}
	is := func(targets ...error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
	switch {
	case is(ipam.ErrClosed):
		return http.StatusInternalServerError
	case is(ipam.ErrInvalid, ipam.ErrOutOfSubnet, ipam.ErrNotAllocatable, resources.ErrInvalidRange):
		return http.StatusBadRequest
	case is(ipam.ErrPoolNotFound, objdb.ErrNotFound):
		return http.StatusNotFound
	case is(ipam.ErrInUse, ipam.ErrExhausted, ipam.ErrPoolExists, objdb.ErrConflict,
		resources.ErrRangeInUse, resources.ErrVLANUnavailable, resources.ErrVLANExhausted,
		resources.ErrVXLANOutOfRange, resources.ErrVXLANUnavailable, resources.ErrVXLANExhausted,
		resources.ErrLocalVLANExhausted, resources.ErrNotDefined):
		return http.StatusConflict
	}
	return 0
}

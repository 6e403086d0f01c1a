package status

import (
	"errors"

	"github.com/bcollard/marina/internal/host"
)

var errBoom = errors.New("boom")

type hostRoute = host.Route

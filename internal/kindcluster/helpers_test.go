package kindcluster

import "errors"

var errBoom = errors.New("boom")

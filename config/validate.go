package config

import (
	"errors"
	"fmt"
	pathpkg "path"
	"slices"
)

// intRange is an inclusive range of a numeric setting (C2).
type intRange struct{ lo, hi int64 }

// The ranges of the numeric tools.codeMode settings (C2), shared by the file parser and Validate.
var (
	rangeTimeoutMs           = intRange{100, 60000}
	rangeMemoryLimitBytes    = intRange{1048576, 1073741824}
	rangeMaxOutputBytes      = intRange{1024, 10485760}
	rangeMaxSnapshotBytes    = intRange{1024, 268435456}
	rangeMaxPendingToolCalls = intRange{1, 128}
	rangeSnapshotTTLSeconds  = intRange{1, 86400}
	rangeMaxSearchLimit      = intRange{1, 50}
)

// Validate checks a CodeMode built in Go (library users fill the struct themselves) against the
// same rules the file parser applies, and reports every problem at once, naming each field as
// the configuration file spells it.
func (c CodeMode) Validate() error {
	var errs []error
	check := func(name string, v int64, r intRange) {
		if v < r.lo || v > r.hi {
			errs = append(errs, fmt.Errorf("tools.codeMode.%s: %d is out of range (%d–%d)", name, v, r.lo, r.hi))
		}
	}
	if c.Runtime != RuntimeQuickJSWASI {
		errs = append(errs, fmt.Errorf("tools.codeMode.runtime: %q is not supported (the only runtime is %q)", c.Runtime, RuntimeQuickJSWASI))
	}
	if c.Mode != ModeOnly {
		errs = append(errs, fmt.Errorf("tools.codeMode.mode: %q is not supported (the only mode is %q)", c.Mode, ModeOnly))
	}
	if len(c.Languages) == 0 {
		errs = append(errs, errors.New("tools.codeMode.languages: must name at least one of \"javascript\" and \"typescript\""))
	}
	for i, l := range c.Languages {
		if l != LanguageJavaScript && l != LanguageTypeScript {
			errs = append(errs, fmt.Errorf("tools.codeMode.languages[%d]: %q is not a language (javascript or typescript)", i, l))
		} else if slices.Index(c.Languages, l) != i {
			errs = append(errs, fmt.Errorf("tools.codeMode.languages[%d]: %q is listed twice", i, l))
		}
	}
	check("timeoutMs", int64(c.TimeoutMs), rangeTimeoutMs)
	check("memoryLimitBytes", c.MemoryLimitBytes, rangeMemoryLimitBytes)
	check("maxOutputBytes", int64(c.MaxOutputBytes), rangeMaxOutputBytes)
	check("maxSnapshotBytes", c.MaxSnapshotBytes, rangeMaxSnapshotBytes)
	check("maxPendingToolCalls", int64(c.MaxPendingToolCalls), rangeMaxPendingToolCalls)
	check("snapshotTtlSeconds", int64(c.SnapshotTTLSeconds), rangeSnapshotTTLSeconds)
	check("maxSearchLimit", int64(c.MaxSearchLimit), rangeMaxSearchLimit)
	if c.Auto && !c.Enabled {
		errs = append(errs, errors.New(`tools.codeMode: Auto ("auto") needs Enabled`))
	}
	for i, pat := range c.PreferredModels {
		if _, err := pathpkg.Match(pat, ""); err != nil || pat == "" {
			errs = append(errs, fmt.Errorf("tools.codeMode.preferredModels[%d]: %q is not a valid model pattern", i, pat))
		}
	}
	if c.SearchDefaultLimit < 1 {
		errs = append(errs, fmt.Errorf("tools.codeMode.searchDefaultLimit: %d is out of range (minimum 1)", c.SearchDefaultLimit))
	}
	return errors.Join(errs...)
}

package rebase

// discardLogger is lifecycle's log.Logger that says nothing: lifecycle's Rebaser
// logs its timings and the names it saves to, which the Result holds.
type discardLogger struct{}

func (discardLogger) Debug(string)          {}
func (discardLogger) Debugf(string, ...any) {}
func (discardLogger) Info(string)           {}
func (discardLogger) Infof(string, ...any)  {}
func (discardLogger) Warn(string)           {}
func (discardLogger) Warnf(string, ...any)  {}
func (discardLogger) Error(string)          {}
func (discardLogger) Errorf(string, ...any) {}

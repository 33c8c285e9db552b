// SwiftPM builds a C target from at least one source file; the call itself is `static inline` in the header.
#include "COpenBeneath.h"

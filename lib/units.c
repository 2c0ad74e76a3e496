/* units.c - see include/hybridfs/units.h. */
#include <errno.h>
#include <stdlib.h>

#include "hybridfs/units.h"

int hy_units_parse_size(const char *text, bool allow_zero, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t unit = 1;

	if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end == 'K' || *end == 'k')
		unit = 1ULL << 10, end++;
	else if (*end == 'M' || *end == 'm')
		unit = 1ULL << 20, end++;
	else if (*end == 'G' || *end == 'g')
		unit = 1ULL << 30, end++;
	else if (*end == 'T' || *end == 't')
		unit = 1ULL << 40, end++;
	if (errno || *end || end == text || (v == 0 && !allow_zero) || v > UINT64_MAX / unit)
		return -EINVAL;
	*out = (uint64_t)v * unit;
	return 0;
}

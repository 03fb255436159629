/*
 * lib/seg/seg_enc_one.h - one record of the EVENTS body encoder, written
 * once and included by seg_enc.c once for each varint writer (portable,
 * and BMI2's pdep), which cannot share one function: a function built for
 * BMI2 cannot be inlined into one that is not.  The includer defines
 *   ENC_ONE     the function's name
 *   ENC_TARGET  its target attribute (empty for the portable one)
 *   ENC_VPUT    the varint writer of a value that may take several bytes
 *   ENC_DET     the detail's bytes when neither it nor its delta fits one
 * and this file undefines them.  The bytes are seg.c's seg_encode_rec().
 */
static inline __attribute__((always_inline)) ENC_TARGET uint8_t *
ENC_ONE(struct enc_prev *pv, uint8_t *p, uint64_t ns, uint64_t w1, uint64_t pid, uint64_t gen,
        uint64_t detail)
{
	uint32_t source = (uint32_t)w1, kind = (uint32_t)(w1 >> 32);
	uint8_t *flagp;
	unsigned flags;

	if (__builtin_expect(kind < KIND_ESCAPE, 1)) {
		*p++ = (uint8_t)kind;
	} else {
		*p++ = KIND_ESCAPE;
		p = vput(p, kind);
	}
	flagp = p++;
	if (__builtin_expect(source - 1u < 64u && (source & (source - 1u)) == 0, 1)) {
		flags = (unsigned)__builtin_ctz(source);
	} else {
		flags = RF_SRC_VARINT;
		p = vput(p, source);
	}
	p = ENC_VPUT(p, zz(ns - pv->ts));
	if (pid == pv->pid && gen == pv->gen) {
		flags |= RF_PID_SAME;
	} else {
		if ((uint32_t)pid == (uint32_t)pv->pid)
			flags |= RF_LOOP_SAME;
		else
			p = ENC_VPUT(p, (uint32_t)pid);
		p = ENC_VPUT(p, pid >> 32);
		p = ENC_VPUT(p, gen);
	}
	if (detail == 0) {
		flags |= RF_DET_ZERO;
	} else {
		uint64_t dz = zz(detail - pv->detail);

		/* Never the delta for a one-byte detail, always for a one-byte
		 * delta of a longer one (the common case of a counter or an
		 * address nearby); else as ENC_DET chooses. */
		if (detail < 0x80) {
			*p++ = (uint8_t)detail;
		} else if (dz < 0x80) {
			flags |= RF_DET_DELTA;
			*p++ = (uint8_t)dz;
		} else {
			p = ENC_DET(p, detail, dz, &flags);
		}
	}
	*flagp = (uint8_t)flags;
	pv->ts = ns;
	pv->pid = pid;
	pv->gen = gen;
	pv->detail = detail;
	return p;
}

#undef ENC_ONE
#undef ENC_TARGET
#undef ENC_VPUT
#undef ENC_DET

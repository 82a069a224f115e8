#include "textflag.h"

// func rtSigaction(sig uintptr, action, old unsafe.Pointer, maskSize uintptr) int64
TEXT ·rtSigaction(SB),NOSPLIT,$0-40
	MOVD	sig+0(FP), R0
	MOVD	action+8(FP), R1
	MOVD	old+16(FP), R2
	MOVD	maskSize+24(FP), R3
	MOVD	$134, R8 // SYS_rt_sigaction
	SVC
	MOVD	R0, ret+32(FP)
	RET

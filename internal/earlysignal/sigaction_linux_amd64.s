#include "textflag.h"

// func rtSigaction(sig uintptr, action, old unsafe.Pointer, maskSize uintptr) int64
TEXT ·rtSigaction(SB),NOSPLIT,$0-40
	MOVQ	sig+0(FP), DI
	MOVQ	action+8(FP), SI
	MOVQ	old+16(FP), DX
	MOVQ	maskSize+24(FP), R10
	MOVQ	$13, AX // SYS_rt_sigaction
	SYSCALL
	MOVQ	AX, ret+32(FP)
	RET

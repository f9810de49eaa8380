; The hypervisor of the Bochs fidelity harness: long mode, VMX root.
; Assembled with nasm -D HBASE=... (the 2 MiB host region the harness owns, identity
; mapped). The harness (machine.py) fills the VMCS field table at HBASE+0xa000 and the
; control block at HBASE+0xc000 before the CPU starts here.
;
;   host_start: IA32_FEATURE_CONTROL lock + VMXON, VMCLEAR + VMPTRLD of one VMCS, one
;               VMWRITE per table row (controls adjusted to the capability MSR named in
;               the row: value | allowed-0, & allowed-1), VMLAUNCH.
;   exit:       every VM exit is logged (reason, qualification, guest-physical and
;               guest-linear address, guest RIP, instruction length, IDT-vectoring
;               information) to HBASE+0xb000 + 64*n; then
;                 VMCALL with eax = END_MAGIC  -> host_done (the harness stops there)
;                 VMCALL, VMFUNC failure (18, 59) -> guest RIP += instruction length
;                 EPT violation / misconfiguration (48, 49) -> the guest restarts at
;                   its command loop (RIP, RSP, CS, SS, RFLAGS from the control block)
;                 anything else -> host_done with the reason logged
bits 64
default rel
%ifndef HBASE
%error "HBASE not defined"
%endif
org HBASE + 0x8000

; addresses in the host region, relative to this code so that they are RIP-relative
%define HREL(off)     ($$ - 0x8000 + (off))
%define VMXON_REGION  HBASE + 0x5000
%define VMCS_REGION   HBASE + 0x6000
%define HOST_STACK    HBASE + 0x8000
%define FIELD_TABLE   HBASE + 0xa000
%define EXIT_LOG      HBASE + 0xb000
%define CTRL          HREL(0xc000)
; control block words
%define C_EXITS       CTRL + 0x00   ; exits logged
%define C_GUEST_RIP   CTRL + 0x08   ; the guest's command loop
%define C_GUEST_RSP   CTRL + 0x10
%define C_CS_SEL      CTRL + 0x18
%define C_CS_AR       CTRL + 0x20
%define C_SS_SEL      CTRL + 0x28
%define C_SS_AR       CTRL + 0x30
%define C_STATUS      CTRL + 0x38   ; 0 running, 1 done, 2 VMX instruction failed, 3 unexpected exit
%define C_VMERR       CTRL + 0x40   ; VM-instruction error after a failure
%define C_FAILED_AT   CTRL + 0x48   ; field of the failing VMWRITE, or 1 VMXON, 2 VMCLEAR, 3 VMPTRLD, 4 VMLAUNCH, 5 VMRESUME
%define END_MAGIC     0x454e44

host_start:
    mov ecx, 0x3a                   ; IA32_FEATURE_CONTROL: lock, VMX outside SMX
    rdmsr
    test eax, 1
    jnz .locked
    or eax, 5
    wrmsr
.locked:
    mov qword [C_FAILED_AT], 1
    vmxon [rel vmxon_ptr]
    jbe fail
    mov qword [C_FAILED_AT], 2
    vmclear [rel vmcs_ptr]
    jbe fail
    mov qword [C_FAILED_AT], 3
    vmptrld [rel vmcs_ptr]
    jbe fail
    mov rsi, FIELD_TABLE
.row:
    mov rdi, [rsi]                  ; field encoding, -1 ends the table
    cmp rdi, -1
    je .rows_done
    mov rbx, [rsi + 8]              ; value
    mov ecx, [rsi + 16]             ; capability MSR, 0 = write as is
    test ecx, ecx
    jz .write
    rdmsr                           ; eax = bits that must be 1, edx = bits that may be 1
    or ebx, eax
    and ebx, edx
.write:
    mov [C_FAILED_AT], rdi
    vmwrite rdi, rbx
    jbe fail
    add rsi, 24
    jmp .row
.rows_done:
    mov rdi, 0x6c14                 ; HOST_RSP
    mov rax, HOST_STACK
    vmwrite rdi, rax
    mov rdi, 0x6c16                 ; HOST_RIP
    lea rax, [rel vm_exit]
    vmwrite rdi, rax
    mov qword [C_FAILED_AT], 4
    vmlaunch
    jmp fail

vm_exit:
    mov r14d, eax                   ; the guest's eax: END_MAGIC asks to stop
    mov rbx, [C_EXITS]
    shl rbx, 6
    mov rax, EXIT_LOG
    add rbx, rax
    mov eax, 0x4402                 ; exit reason
    vmread [rbx], rax
    mov eax, 0x6400                 ; exit qualification
    vmread [rbx + 8], rax
    mov eax, 0x2400                 ; guest-physical address
    vmread [rbx + 16], rax
    mov eax, 0x640a                 ; guest-linear address
    vmread [rbx + 24], rax
    mov eax, 0x681e                 ; guest RIP
    vmread [rbx + 32], rax
    mov eax, 0x440c                 ; VM-exit instruction length
    vmread [rbx + 40], rax
    mov eax, 0x4408                 ; IDT-vectoring information
    vmread [rbx + 48], rax
    mov eax, 0x0004                 ; EPTP index
    vmread [rbx + 56], rax
    inc qword [C_EXITS]
    cmp r14d, END_MAGIC
    je finished
    mov eax, [rbx]
    and eax, 0xffff
    cmp eax, 18                     ; VMCALL
    je advance
    cmp eax, 59                     ; VMFUNC
    je advance
    cmp eax, 48                     ; EPT violation
    je restart
    cmp eax, 49                     ; EPT misconfiguration
    je restart
    mov qword [C_STATUS], 3
    jmp host_done

advance:
    mov rax, [rbx + 32]
    add rax, [rbx + 40]
    mov edi, 0x681e
    vmwrite rdi, rax
    jmp resume

restart:
    mov edi, 0x681e                 ; GUEST_RIP
    vmwrite rdi, [C_GUEST_RIP]
    mov edi, 0x681c                 ; GUEST_RSP
    vmwrite rdi, [C_GUEST_RSP]
    mov edi, 0x0802                 ; GUEST_CS selector
    vmwrite rdi, [C_CS_SEL]
    mov edi, 0x4816                 ; GUEST_CS access rights
    vmwrite rdi, [C_CS_AR]
    mov edi, 0x0804                 ; GUEST_SS selector
    vmwrite rdi, [C_SS_SEL]
    mov edi, 0x4818                 ; GUEST_SS access rights
    vmwrite rdi, [C_SS_AR]
    mov eax, 0xffffffff             ; flat limits and zero bases: a ring-3 -> ring-0
    mov edi, 0x4802                 ; interrupt in 64-bit mode left a null SS behind
    vmwrite rdi, rax
    mov edi, 0x4804
    vmwrite rdi, rax
    xor eax, eax
    mov edi, 0x6808
    vmwrite rdi, rax
    mov edi, 0x680a
    vmwrite rdi, rax
    mov edi, 0x6820                 ; GUEST_RFLAGS (IOPL 3, as plan.py starts it)
    mov eax, 0x3002
    vmwrite rdi, rax
    mov edi, 0x4824                 ; interruptibility state
    xor eax, eax
    vmwrite rdi, rax

resume:
    mov qword [C_FAILED_AT], 5
    vmresume
    jmp fail

fail:
    mov qword [C_STATUS], 2
    mov edi, 0x4400                 ; VM-instruction error (meaningful after VMfailValid)
    vmread rax, rdi
    mov [C_VMERR], rax
    jmp host_done

finished:
    mov qword [C_STATUS], 1
host_done:
    jmp host_done

align 8
vmxon_ptr: dq VMXON_REGION
vmcs_ptr:  dq VMCS_REGION

; the offset of host_done, for the harness (the last 4 bytes of the binary)
    dd host_done - $$

; The lab's own hypervisor for AMD SVM with nested paging, run by QEMU (TCG) as a
; multiboot kernel. It knows nothing of the scenarios: the batch (a multiboot module,
; written by plan.py) says what to load where, which VMCB fields to set before each
; VMRUN, and which physical words to report after each command. Output goes to the
; debug console (port 0xe9), the end to isa-debug-exit (port 0xf4).
;
; Batch:  u64 host paging levels (4 or 5), u64 scenario count, then per scenario
;   u64 magic SCN_MAGIC, u64 flags (bit 0 host EFER.NXE, bit 1 host CR4.SMEP),
;   u64 chunk count, u64 command count, u64 clear count;
;   chunks: u64 pa, u64 length (a multiple of 8), the bytes;
;   clears: u64 page address (zeroed after the scenario);
;   commands: u64 op (1 VMRUN, 2 store a u64 at arg0 = arg1, 3 nothing), u64 arg0,
;     u64 arg1, u64 rbx, u64 rdx, u64 field count, u64 dump count,
;     fields: u64 VMCB offset, u64 value; dumps: u64 pa.
; Output per command: u64 OUT_MAGIC | index, exit code, EXITINFO1, EXITINFO2, guest
; RAX, guest RIP, then the dumped words; after a scenario u64 END_MAGIC.

%define MB_FLAGS   0x00010000
%define LOAD       0x00100000
%define HOSTMEM    0x03c00000          ; host structures (see layout.py)
%define PML5       (HOSTMEM + 0x0000)
%define PML4       (HOSTMEM + 0x1000)
%define PDPT0      (HOSTMEM + 0x2000)
%define PDPT1      (HOSTMEM + 0x3000)
%define GDT        (HOSTMEM + 0x4000)
%define HSAVE      (HOSTMEM + 0x5000)
%define VMCB       (HOSTMEM + 0x6000)
%define OUTBUF     (HOSTMEM + 0x8000)
%define STACKTOP   (HOSTMEM + 0x20000)
%define SCN_MAGIC  0x314e4353564d56    ; "VMVSCN1"
%define OUT_MAGIC  0x7e5500000000      ; | command index
%define END_MAGIC  0x444e45454e4f44    ; "DONEEND"

        bits 32
        org LOAD
mb_header:
        dd 0x1BADB002, MB_FLAGS, -(0x1BADB002 + MB_FLAGS)
        dd mb_header, LOAD, 0, 0, start32

start32:
        cli
        mov esp, STACKTOP
        ; the module: mods_count at +20, mods_addr at +24
        mov esi, [ebx + 24]
        mov esi, [esi]                   ; mod_start
        mov [batch], esi
        ; host page tables: identity 0..1 TiB with 1 GiB pages (US clear: SMEP harmless)
        mov edi, PML5
        xor eax, eax
        mov ecx, 0x4000 / 4
        rep stosd
        mov dword [PML5], PML4 | 3
        mov dword [PML4], PDPT0 | 3
        mov dword [PML4 + 8], PDPT1 | 3
        mov edi, PDPT0
        xor ecx, ecx
.fill:  mov eax, ecx
        shl eax, 30
        or eax, 0x83
        mov [edi + ecx * 8], eax
        mov eax, ecx
        shr eax, 2
        mov [edi + ecx * 8 + 4], eax
        inc ecx
        cmp ecx, 1024
        jb .fill
        ; GDT: null, 64-bit code, data
        mov dword [GDT], 0
        mov dword [GDT + 4], 0
        mov dword [GDT + 8], 0x0000ffff
        mov dword [GDT + 12], 0x00af9b00
        mov dword [GDT + 16], 0x0000ffff
        mov dword [GDT + 20], 0x00cf9300
        mov word [gdtr], 23
        mov dword [gdtr + 2], GDT
        lgdt [gdtr]
        ; CR4: PAE (+ LA57 when the batch asks for 5-level host paging), OSFXSR
        mov eax, 0x220
        mov esi, [batch]
        cmp dword [esi], 5
        jne .cr4
        or eax, 1 << 12
        mov ecx, PML5
        jmp .cr3
.cr4:   mov ecx, PML4
.cr3:   mov cr4, eax
        mov cr3, ecx
        mov ecx, 0xC0000080              ; EFER: LME, SVME, NXE
        rdmsr
        or eax, (1 << 8) | (1 << 12) | (1 << 11)
        wrmsr
        mov eax, cr0
        or eax, 0x80000001
        mov cr0, eax
        jmp 0x08:start64

        bits 64
start64:
        mov ax, 0x10
        mov ds, ax
        mov es, ax
        mov ss, ax
        mov rsp, STACKTOP
        mov ecx, 0xC0010117              ; VM_HSAVE_PA
        mov eax, HSAVE
        xor edx, edx
        wrmsr
        mov esi, [batch]
        mov r15, [rsi + 8]               ; scenario count
        add rsi, 16
scenario:
        test r15, r15
        jz finish
        dec r15
        mov rax, SCN_MAGIC
        cmp [rsi], rax
        jne finish
        ; host EFER.NXE and CR4.SMEP decide the nested walk's NX checks and I/D bit
        mov rbx, [rsi + 8]
        mov ecx, 0xC0000080
        rdmsr
        and eax, ~(1 << 11)
        test rbx, 1
        jz .nx
        or eax, 1 << 11
.nx:    wrmsr
        mov rax, cr4
        and rax, ~(1 << 20)
        test rbx, 2
        jz .smep
        or rax, 1 << 20
.smep:  mov cr4, rax
        mov r12, [rsi + 16]              ; chunks
        mov r13, [rsi + 24]              ; commands
        mov r14, [rsi + 32]              ; clears
        add rsi, 40
.chunk: test r12, r12
        jz .chunks_done
        dec r12
        mov rdi, [rsi]
        mov rcx, [rsi + 8]
        add rsi, 16
        shr rcx, 3
        rep movsq
        jmp .chunk
.chunks_done:
        mov [clears], rsi
        lea rsi, [rsi + r14 * 8]
        xor ebp, ebp                     ; command index
.cmd:   test r13, r13
        jz .cmds_done
        dec r13
        mov rdi, OUTBUF
        mov rax, OUT_MAGIC
        or rax, rbp
        stosq
        mov rax, [rsi]                   ; op
        cmp rax, 2
        jne .notstore
        mov rbx, [rsi + 8]
        mov rax, [rsi + 16]
        mov [rbx], rax
.notstore:
        ; VMCB fields
        mov rcx, [rsi + 40]
        lea rbx, [rsi + 56]
.field: test rcx, rcx
        jz .fields_done
        mov rdx, [rbx]
        mov rax, [rbx + 8]
        mov [VMCB + rdx], rax
        add rbx, 16
        dec rcx
        jmp .field
.fields_done:
        mov [dumps], rbx
        cmp qword [rsi], 1
        jne .norun
        push rsi
        push rdi
        push rbp
        mov rbx, [rsi + 24]
        mov rdx, [rsi + 32]
        mov eax, VMCB
        vmrun
        pop rbp
        pop rdi
        pop rsi
        mov rax, [VMCB + 0x70]           ; EXITCODE
        stosq
        mov rax, [VMCB + 0x78]           ; EXITINFO1
        stosq
        mov rax, [VMCB + 0x80]           ; EXITINFO2
        stosq
        mov rax, [VMCB + 0x400 + 0x1f8]  ; guest RAX
        stosq
        mov rax, [VMCB + 0x400 + 0x178]  ; guest RIP
        stosq
        jmp .dump
.norun: xor eax, eax
        mov rcx, 5
        rep stosq
.dump:  mov rcx, [rsi + 48]
        mov rbx, [dumps]
.d1:    test rcx, rcx
        jz .d_done
        mov rax, [rbx]
        mov rax, [rax]
        stosq
        add rbx, 8
        dec rcx
        jmp .d1
.d_done:
        mov rsi, rbx
        call flush
        inc rbp
        jmp .cmd
.cmds_done:
        ; zero the scenario's pages for the next one
        mov rbx, [clears]
.clr:   test r14, r14
        jz .clr_done
        dec r14
        mov rdi, [rbx]
        add rbx, 8
        xor eax, eax
        mov ecx, 512
        rep stosq
        jmp .clr
.clr_done:
        mov rdi, OUTBUF
        mov rax, END_MAGIC
        stosq
        push rsi
        call flush
        pop rsi
        jmp scenario

; write OUTBUF..rdi to the debug console
flush:
        push rsi
        mov rcx, rdi
        mov rsi, OUTBUF
        sub rcx, rsi
        mov dx, 0xe9
        rep outsb
        pop rsi
        ret

finish:
        mov rdi, OUTBUF
        mov rax, END_MAGIC
        not rax
        stosq
        call flush
        mov dx, 0xf4
        xor eax, eax
        out dx, eax
.h:     hlt
        jmp .h

        align 8
batch:  dq 0
clears: dq 0
dumps:  dq 0
gdtr:   dw 0
        dq 0

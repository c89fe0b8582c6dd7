// SPDX-License-Identifier: MIT
/*
 * odl-mbox: the guest's agent in a deterministic testbed run (docs/vm.md,
 * "Commands while the run stands still"). Polls the testbed mailbox (BAR 4
 * of the emulated NHI, registers ODL_LINKD_MBOX_* in odl/wire/linkd.h),
 * runs each command it finds with /bin/sh, writes the output and a line
 * "@@ODL-DONE <rc>@@" to /dev/ttyS1 (a file on the host), waits until the
 * tty sent all of it, and only then marks the command done.
 *
 * The mailbox is mapped through sysfs (resource4): read() of /dev/mem
 * reaches RAM only. Built static into the busybox guest image
 * (build-guest.sh).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "odl/wire/linkd.h"

#define OUT_FILE "/tmp/odl-mbox.out"
#define CMD_FILE "/tmp/odl-mbox.cmd"

static volatile uint32_t *regs;

static uint32_t rd(uint32_t off)
{
	return regs[off / 4];
}

static void wr(uint32_t off, uint32_t v)
{
	regs[off / 4] = v;
}

/* The emulated NHI's function (class 0x0c0340), as init looks for it. */
static int find_nhi(char *path, size_t n)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char f[512], cls[32] = "";
		FILE *fp;

		if (e->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "/sys/bus/pci/devices/%s/class", e->d_name);
		fp = fopen(f, "r");
		if (!fp)
			continue;
		if (fgets(cls, sizeof(cls), fp) && strncmp(cls, "0x0c0340", 8) == 0) {
			snprintf(path, n, "/sys/bus/pci/devices/%s/resource4", e->d_name);
			found = 1;
		}
		fclose(fp);
	}
	closedir(d);
	return found;
}

/* Runs @cmd_file with sh, output to OUT_FILE; the exit status. */
static int run(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid < 0)
		return 127;
	if (pid == 0) {
		int out = open(OUT_FILE, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);

		if (out < 0 || in < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		execl("/bin/sh", "sh", CMD_FILE, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The output and the marker to the host; returns once the tty sent them. */
static void reply(int rc)
{
	char buf[4096], mark[64];
	int tty = open("/dev/ttyS1", O_WRONLY | O_NOCTTY);
	int out = open(OUT_FILE, O_RDONLY);
	ssize_t n;

	if (tty < 0)
		return;
	while (out >= 0 && (n = read(out, buf, sizeof(buf))) > 0)
		if (write(tty, buf, (size_t)n) != n)
			break;
	snprintf(mark, sizeof(mark), "@@ODL-DONE %d@@\n", rc);
	if (write(tty, mark, strlen(mark)) < 0)
		perror("odl-mbox: ttyS1");
	tcdrain(tty);
	close(tty);
	if (out >= 0)
		close(out);
}

int main(void)
{
	struct timespec poll_wait = { 0, 2000000 }; /* 2 ms of guest time */
	char path[600];
	uint32_t last = 0;
	void *map;
	int fd;

	if (!find_nhi(path, sizeof(path))) {
		fprintf(stderr, "odl-mbox: no USB4 NHI (class 0x0c0340)\n");
		return 1;
	}
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	map = mmap(NULL, ODL_LINKD_MBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("odl-mbox: mmap");
		return 1;
	}
	regs = map;
	if (rd(ODL_LINKD_MBOX_MAGIC) != ODL_LINKD_MBOX_MAGIC_VALUE) {
		fprintf(stderr, "odl-mbox: %s is not the testbed mailbox\n", path);
		return 1;
	}
	printf("ODL-GUEST: ready\n");
	fflush(stdout);
	wr(ODL_LINKD_MBOX_READY, 1);
	for (;;) {
		uint32_t seq = rd(ODL_LINKD_MBOX_CMD_SEQ), len, i;
		char cmd[ODL_LINKD_MBOX_CMD_MAX + 1];
		FILE *f;
		int rc;

		if (seq == last) {
			nanosleep(&poll_wait, NULL);
			continue;
		}
		len = rd(ODL_LINKD_MBOX_CMD_LEN);
		if (len > ODL_LINKD_MBOX_CMD_MAX)
			len = ODL_LINKD_MBOX_CMD_MAX;
		for (i = 0; i < len; i += 4) {
			uint32_t w = rd(ODL_LINKD_MBOX_CMD + i);

			memcpy(cmd + i, &w, len - i < 4 ? len - i : 4);
		}
		cmd[len] = '\0';
		f = fopen(CMD_FILE, "w");
		if (f) {
			fputs(cmd, f);
			fputc('\n', f);
			fclose(f);
		}
		rc = f ? run() : 127;
		reply(rc);
		wr(ODL_LINKD_MBOX_DONE_RC, (uint32_t)rc);
		wr(ODL_LINKD_MBOX_DONE_SEQ, seq);
		last = seq;
	}
}

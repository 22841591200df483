#!/usr/bin/perl
# Check that the TAP tests wait on observable state rather than time (make
# unitcheck): every line of test/t/*.pl and test/t/*.pm that calls sleep or
# usleep (Perl's, or a shell's or Python's in a script the test writes;
# pg_sleep, a four-argument select) has a comment on that line or the line
# above. A sleep inside a poll loop says
# what the loop waits for; any other sleep says why nothing observable
# exists to wait on (proving that something does not happen within a
# window, pacing a load).
#
# Exits 1 with one file:line per violation; prints a summary line either way.
use strict;
use warnings;
use File::Basename qw(dirname);

my $root = dirname(__FILE__) . '/../..';
my @files = @ARGV ? @ARGV : sort glob("$root/test/t/*.pl $root/test/t/*.pm");

# a call: sleep or usleep followed by an argument list or a number/variable
# (not the word inside a name, an import list or a comment)
my $call = qr/
	(?<![\w\$\@%>.])(?:\w+::)*u?sleep\s*(?:\(|[\d\$])	# Perl's (Time::HiRes's), a shell's
	| \btime\.sleep\s*\(									# Python's
	| \bpg_sleep(?:_for|_until)?\s*\(						# SQL's
	| \bselect\s*\(\s*undef\s*,\s*undef\s*,\s*undef\s*,	# Perl's select as a sleep
/x;

my ($checked, @bad) = (0);
for my $file (@files)
{
	open(my $fh, '<', $file) or die "$file: $!\n";
	my $prev = '';
	while (my $line = <$fh>)
	{
		my $code = $line;
		$code =~ s/^\s*#.*//;               # a comment line calls nothing
		$code =~ s/\bqw\s*\([^)]*\)//g;     # use Time::HiRes qw(usleep)
		if ($code =~ $call)
		{
			$checked++;
			my $commented = $line =~ /\S.*#\s*\S/ || $prev =~ /^\s*#/;
			(my $name = $file) =~ s{^\Q$root\E/}{};
			push @bad, "$name:$.: a sleep without a comment saying why (what it waits for, or why nothing observable exists)"
			  unless $commented;
		}
		$prev = $line;
	}
	close $fh;
}
print "$_\n" for @bad;
printf "check_sleeps: %d sleep(s) in %d file(s), %d without a comment\n", $checked, scalar @files, scalar @bad;
exit(@bad ? 1 : 0);

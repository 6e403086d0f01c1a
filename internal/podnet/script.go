package podnet

// scriptText is the VM's marina-podnet, with @NAME@ for the constants.
// Everything it reads from Docker and from the clusters' API servers is
// checked before it is used: a route only for a podCIDR inside its
// cluster's pod range, only via an address of the kind network.
const scriptText = `#!/bin/bash
# Written by marina (network.podRouting); marina up rewrites it.
# Routes every cluster named in @CONF@ at layer 3, without address
# translation:
#  - each node's podCIDR (from its cluster's API) via the node's address on
#    the kind network, and the cluster's service range via one node (the
#    first worker by name, else the control plane). Routes carry proto
#    @PROTO@; only those are replaced or deleted, and none is made where a
#    route of someone else's has the same destination.
#  - in each node, the nat chain @CHAIN@, jumped to first from POSTROUTING,
#    keeps pods' addresses towards the other clusters (ahead of kindnetd's
#    KIND-MASQ-AGENT, which only appends its rules) and the Mac's and the
#    other clusters' towards the node's own pods. Checked again every
#    minute, as kindnetd resyncs its own.
# "marina-podnet once" runs one pass; with no argument, one every 10 s.
# Every Docker call has a time limit: a wedged node delays a pass, never
# the marina command that waits for one.
set -u -o pipefail
conf=@CONF@
state=/run/marina-podnet

octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
addr_re="^($octet\.){3}$octet\$"
cidr_re="^($octet\.){3}$octet/([0-9]|[12][0-9]|3[0-2])\$"
rule_re='^-A @CHAIN@( (!|-[sdo]|[0-9./]+|eth0|-j|ACCEPT))+$'
name_re='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'

# say KEY TEXT: print TEXT once for KEY, until KEY says something else
# (a long-running service passes every 10 s); hush KEY forgets it.
declare -A said=()
say() {
	if [ "${said[$1]:-}" != "$2" ]; then
		echo "marina-podnet: $2" >&2
		said[$1]=$2
	fi
}
hush() { unset "said[$1]"; }

# num ADDR: ADDR as a number, in REPLY (no subshell: a pass runs often).
num() {
	local IFS=. a b c d
	read -r a b c d <<<"$1"
	REPLY=$(((a << 24) | (b << 16) | (c << 8) | d))
}

# inside X NET: X, an address or a prefix at its network address, lies
# within the prefix NET.
inside() {
	local x=$1 a l=32 n=${2%/*} nl=${2#*/} m
	if [[ $x == */* ]]; then
		[[ $x =~ $cidr_re ]] || return 1
		a=${x%/*} l=${x#*/}
	else
		[[ $x =~ $addr_re ]] || return 1
		a=$x
	fi
	((l >= nl)) || return 1
	local ai ni
	num "$a"
	ai=$REPLY
	num "$n"
	ni=$REPLY
	m=$(((0xffffffff << (32 - nl)) & 0xffffffff))
	(((ai & m) == ni)) || return 1
	m=$(((0xffffffff << (32 - l)) & 0xffffffff))
	(((ai & m) == ai))
}

# node_rules ID RULES: make the node's @CHAIN@ hold exactly RULES, jumped
# to first from POSTROUTING, in each iptables backend that holds the
# masquerades it must come before (kindnetd's KIND-MASQ-AGENT, kube-proxy's
# KUBE-POSTROUTING): an ACCEPT in one backend does not stop the other's.
# It exits 3 when the node has neither (yet, or at all: a CNI with no
# iptables masquerade), and the next check tries again.
node_rules() {
	timeout 60 docker exec -i "$1" bash -s <<EOF
set -eu
want='$2'
done=0
for ipt in iptables-nft iptables-legacy; do
	command -v \$ipt >/dev/null || continue
	\$ipt -w -t nat -S 2>/dev/null | grep -q -e '^-N KIND-MASQ-AGENT\$' -e '^-N KUBE-POSTROUTING\$' || continue
	\$ipt -w -t nat -N @CHAIN@ 2>/dev/null || true
	have=\$(\$ipt -w -t nat -S @CHAIN@ | grep -v '^-N ' || true)
	if [ "\$have" != "\$want" ]; then
		\$ipt -w -t nat -F @CHAIN@
		while read -r r; do
			\$ipt -w -t nat \$r
		done <<<"\$want"
	fi
	rules=\$(\$ipt -w -t nat -S POSTROUTING | grep -v '^-[PN] ' || true)
	if [ "\$(printf '%s\n' "\$rules" | head -n 1)" != "-A POSTROUTING -j @CHAIN@" ] ||
		[ "\$(printf '%s\n' "\$rules" | grep -c -- '-j @CHAIN@\$')" != 1 ]; then
		while \$ipt -w -t nat -D POSTROUTING -j @CHAIN@ 2>/dev/null; do :; done
		\$ipt -w -t nat -I POSTROUTING 1 -j @CHAIN@
	fi
	done=1
done
[ "\$done" = 1 ] || exit 3
EOF
}

pass() {
	local f id cl role name started ip cp kind pods services key k v rules rc minute
	minute=$(($(date +%s) / 60))
	local -A want=() node_ip=() node_cluster=() node_role=() node_name=() node_started=()
	mkdir -p "$state"
	local ids nodes_out=''
	ids=$(timeout 30 docker ps -q --no-trunc --filter label=io.x-k8s.kind.cluster) || return 1
	if [ -n "$ids" ]; then
		# Read whole or not at all: a pass that knew no node would delete
		# every route.
		# shellcheck disable=SC2086 # ids are words
		nodes_out=$(timeout 30 docker inspect -f '{{.Id}} {{index .Config.Labels "io.x-k8s.kind.cluster"}} {{index .Config.Labels "io.x-k8s.kind.role"}} {{.Name}} {{.State.StartedAt}} {{with index .NetworkSettings.Networks "@NET@"}}{{.IPAddress}}{{end}}' $ids) || return 1
		while read -r id cl role name started ip; do
			[[ $id =~ ^[0-9a-f]{64}$ && $cl =~ $name_re ]] || continue
			case $role in control-plane | worker) ;; *) continue ;; esac
			node_cluster[$id]=$cl node_role[$id]=$role node_name[$id]=${name#/}
			node_started[$id]=$started node_ip[$id]=${ip:-}
		done <<<"$nodes_out"
	fi
	for f in "$conf"/*.conf; do
		[ -f "$f" ] || continue
		cl=${f##*/}
		cl=${cl%.conf}
		[[ $cl =~ $name_re ]] || continue
		kind='' pods='' services='' rules=''
		while read -r k v; do
			case $k in
			kind) kind=$v ;; pods) pods=$v ;; services) services=$v ;;
			rule) if [[ $v =~ $rule_re ]]; then rules+=$v$'\n'; fi ;;
			esac
		done <"$f"
		[[ $kind =~ $cidr_re && $pods =~ $cidr_re && $services =~ $cidr_re ]] || continue
		rules=${rules%$'\n'}
		# The cluster's running nodes on the kind network; a control plane
		# answers for the podCIDRs.
		local nodes=() workers=() cps=()
		for id in "${!node_cluster[@]}"; do
			[ "${node_cluster[$id]}" = "$cl" ] || continue
			inside "${node_ip[$id]}" "$kind" || continue
			nodes+=("$id")
			if [ "${node_role[$id]}" = worker ]; then workers+=("${node_name[$id]} $id"); else cps+=("${node_name[$id]} $id"); fi
		done
		[ ${#nodes[@]} -gt 0 ] || continue
		local missing=0
		for id in "${nodes[@]}"; do [ -s "$state/cidr-$id" ] || missing=1; done
		if [ "$missing" = 1 ] && [ ${#cps[@]} -gt 0 ]; then
			cp=$(printf '%s\n' "${cps[@]}" | sort | head -n 1)
			cp=${cp#* }
			while read -r name v; do
				inside "$v" "$pods" || continue
				for id in "${nodes[@]}"; do
					if [ "${node_name[$id]}" = "$name" ]; then echo "$v" >"$state/cidr-$id"; fi
				done
			done < <(timeout 20 docker exec "$cp" kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes \
				-o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.spec.podCIDR}{"\n"}{end}' 2>/dev/null)
		fi
		for id in "${nodes[@]}"; do
			if [ -s "$state/cidr-$id" ]; then
				read -r v <"$state/cidr-$id"
				if inside "$v" "$pods"; then want[$v]=${node_ip[$id]}; fi
			fi
			# Checked every pass while the node is young: kube-proxy, starting
			# after a restart, puts its own jump first; then every minute.
			started=$(date -d "${node_started[$id]}" +%s 2>/dev/null || echo 0)
			key="${node_started[$id]} $minute $(printf '%s' "$rules" | sha256sum)"
			if [ -n "$rules" ] && { (($(date +%s) - started < 300)) || [ "$(cat "$state/rules-$id" 2>/dev/null)" != "$key" ]; }; then
				rc=0
				node_rules "$id" "$rules" || rc=$?
				case $rc in
				0)
					echo "$key" >"$state/rules-$id"
					hush "rules $id"
					;;
				3)
					# Nothing to go ahead of yet: tried every pass while
					# the node is young (kindnetd and kube-proxy start after
					# it), then every minute (a CNI with no iptables
					# masquerade).
					say "rules $id" "${node_name[$id]} has no KIND-MASQ-AGENT or KUBE-POSTROUTING chain: nothing to exempt yet"
					echo "$key" >"$state/rules-$id"
					;;
				*) say "rules $id" "could not set ${node_name[$id]}'s @CHAIN@ rules (exit $rc); trying again" ;;
				esac
			fi
		done
		# The service range goes to the first worker, where pods run.
		v=$(printf '%s\n' "${workers[@]}" | sort | head -n 1)
		[ -n "$v" ] || v=$(printf '%s\n' "${cps[@]}" | sort | head -n 1)
		want[$services]=${node_ip[${v#* }]}
	done
	# Routes: replace what differs, delete marina's routes no cluster wants.
	local -A have=()
	while read -r k _ v _; do have[$k]=$v; done < <(ip -4 route show proto @PROTO@ root 10.0.0.0/8 | grep ' via ')
	for k in "${!want[@]}"; do
		[ "${have[$k]:-}" != "${want[$k]}" ] || continue
		# replace matches a route by destination, whoever made it: a route
		# of someone else's there (a Docker network's) is left alone. All of
		# ip's output is read (no grep -q), protocols as numbers (-N).
		if ! v=$(ip -N -4 route show exact "$k"); then
			say "route $k" "could not read the VM's routes of $k; not routing it"
			continue
		fi
		v=$(printf '%s\n' "$v" | grep -vE '^$| proto @PROTO@( |$)' || true)
		if [ -n "$v" ]; then
			say "route $k" "$k is routed by someone else in the VM (${v%%$'\n'*}); not routing it"
			continue
		fi
		hush "route $k"
		if ! ip -4 route replace "$k" via "${want[$k]}" dev @BRIDGE@ proto @PROTO@; then
			say "route $k" "could not route $k via ${want[$k]}"
		fi
	done
	for k in "${!have[@]}"; do
		if [ -z "${want[$k]:-}" ] && inside "$k" 10.0.0.0/8; then ip -4 route del "$k" proto @PROTO@ 2>/dev/null || true; fi
	done
	# Forget nodes that are gone.
	for f in "$state"/cidr-* "$state"/rules-*; do
		[ -e "$f" ] || continue
		id=${f##*-}
		[ -n "${node_cluster[$id]:-}" ] || rm -f -- "$f"
	done
	return 0
}

exec 9>/run/marina-podnet.lock
if [ "${1:-}" = once ]; then
	if ! flock -w 120 9; then
		echo "marina-podnet: a pass has held /run/marina-podnet.lock for 2 minutes; not waiting longer" >&2
		exit 1
	fi
	pass
	exit
fi
while :; do
	flock 9
	pass || true
	flock -u 9
	sleep 10
done
`
